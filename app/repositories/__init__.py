"""Repositories: all of the service's SQL."""
