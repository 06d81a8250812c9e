"""The background worker: the job queue's runner, leases and handlers."""
