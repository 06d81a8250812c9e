"""What every layer uses: settings, errors, logging, metrics, ids and task helpers."""
