"""`with_guard_off`: let a test fixture damage harvest_events; production code must not call it."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from harvest_engine.store.sqlite.guard import Connection, guard_off

if TYPE_CHECKING:
    from collections.abc import Iterator


class _HasConnection(Protocol):
    @property
    def connection(self) -> Connection: ...


@contextmanager
def with_guard_off(connection: Connection | _HasConnection) -> Iterator[Connection]:
    """Lift the two append-only triggers of harvest_events inside a `with` block.

    The triggers refuse every UPDATE of an event and every INSERT over a
    stored (exec_id, seq). A fixture that must write a damaged
    event lifts them here; they come back when the block ends, also on error.

    Args:
        connection: a raw SQLite connection, or a `SqliteStore` (its
            `.connection` is used).

    Yields:
        The connection to write through.
    """
    conn = connection if isinstance(connection, Connection) else connection.connection
    with guard_off(conn) as raw:
        yield raw
