"""Calls into runs: starts, signals, queries, updates and their *_with_start forms."""
