"""Agents' lifecycle hooks (Claude Code's) turned into recalls, steps and episodes."""
