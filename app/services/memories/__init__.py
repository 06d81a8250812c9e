"""Memories: create, read, search and the lifecycle of typed memory cells."""
