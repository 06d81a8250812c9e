"""`python -m app.cli`: the `engram` command."""

from app.cli import main

main()
