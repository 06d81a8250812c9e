"""Agent integrations: Claude Code, Codex and Cursor sessions as episodes."""
