"""Repairing and steering runs: reset, fork, pause and unpause, and the bulk forms by filter."""
