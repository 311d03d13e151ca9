"""The serving heartbeat on Postgres: a harvest_meta row a serving worker stamps by the server's clock.

Clients tell a database nobody serves (`NotServed`) by the beat's age.
Workers and clients on other machines compare beats with one clock, the
server's, so no two machines' clocks need agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

HEARTBEAT_KEY = "serving_heartbeat"
"""The harvest_meta key serving workers write their latest beat (micros) to."""

_SERVER_NOW = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

_BEAT = (
    f"INSERT INTO harvest_meta (key, value) VALUES (%s, {_SERVER_NOW}::text) "
    "ON CONFLICT (key) DO UPDATE SET value = GREATEST(harvest_meta.value::bigint, "
    "excluded.value::bigint)::text"
)
_AGE = f"SELECT {_SERVER_NOW} - value::bigint FROM harvest_meta WHERE key = %s"


def beat(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    """Record that a worker serves the database now (the server's clock; the latest beat wins)."""
    conn.execute(_BEAT, (HEARTBEAT_KEY,))


def served_ago(conn: psycopg.Connection[tuple[Any, ...]]) -> float | None:
    """Seconds since a worker last beat (by the server's clock); None when none ever did."""
    row = conn.execute(_AGE, (HEARTBEAT_KEY,)).fetchone()
    return None if row is None else int(row[0]) / 1_000_000
