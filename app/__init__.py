"""Engram: a memory service for AI agents."""
