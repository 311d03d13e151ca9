"""The `harvest` command line (`python -m harvest_engine`, the script): every command registered."""

from __future__ import annotations

from harvest_engine.cli import follow, operate, reads
from harvest_engine.cli.app import main

__all__ = ["follow", "main", "operate", "reads"]
