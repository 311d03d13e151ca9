"""The `harvest` command line (`python -m harvest_engine`, the script): every command registered."""

from __future__ import annotations

from harvest_engine.cli import (
    client_commands,
    flow,
    follow,
    http_api,
    operate,
    progress,
    reads,
    repair_commands,
    schedule_commands,
    transfer,
)
from harvest_engine.cli.app import main

__all__ = [
    "client_commands",
    "flow",
    "follow",
    "http_api",
    "main",
    "operate",
    "progress",
    "reads",
    "repair_commands",
    "schedule_commands",
    "transfer",
]
