"""Past sessions read from agents' transcripts as the events their hooks would have sent.

Pure parsers: no network, no database."""

from app.services.agents.transcripts.claude_code import claude_code_files, read_claude_code
from app.services.agents.transcripts.codex import codex_files, read_codex

__all__ = ["claude_code_files", "codex_files", "read_claude_code", "read_codex"]
