"""The runtime: SqliteRuntime and its drive, start, signal and task concerns."""
