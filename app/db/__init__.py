"""Engines per backend (SQLite, PostgreSQL, libSQL), transactions and migrations."""
