"""Who may do what: API keys, auth, the audit log, rate limits, idempotent retries."""
