"""Operations: backups, restores, the dashboard's figures and the job queue."""
