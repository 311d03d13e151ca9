"""The SQLite store: the only SQL in the project."""
