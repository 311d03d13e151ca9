"""Dialogs that act on a file: start, signal, query, update, cancel, schedules, purge."""
