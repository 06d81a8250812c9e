"""Use cases by domain; every door (HTTP, MCP, UI, hooks, CLI, worker) calls the same one."""
