"""Persistence: the DurableStore protocol, its SQLite implementation and the reader."""
