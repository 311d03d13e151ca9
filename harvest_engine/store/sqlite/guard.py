"""Lift the append-only triggers of harvest_events for the length of a block (test fixtures)."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING

from harvest_engine.store.sqlite.migrations import install_guard
from harvest_engine.store.sqlite.schema import TRIGGER_NAMES

if TYPE_CHECKING:
    from collections.abc import Iterator

Connection = sqlite3.Connection
"""The connection type, named for modules that may not import sqlite3 (DESIGN)."""


@contextmanager
def guard_off(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Drop both triggers, yield the connection, and create them again, also on error."""
    for name in TRIGGER_NAMES:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    try:
        yield conn
    finally:
        install_guard(conn)
