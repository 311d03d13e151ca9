"""Syncing a psycopg pipeline without the hang psycopg leaves when a statement outgrew the socket.

psycopg (3.1-3.3) sends pipelined statements on a non-blocking socket and
stops writing once its command queue is empty, even when libpq still holds
unsent bytes (a statement carrying a ~1 MB payload does not fit the socket
buffer at once). A sync, a nested ``conn.pipeline()`` (how `settled` learns
a row count), then waits to read results the server can never send: the
server is still waiting for the rest of that statement (``ClientRead``).
Its pipeline exit and its fetches flush first (psycopg #685); these syncs do
not, so `synced` flushes libpq's output buffer before entering one.

Duck-typed on psycopg's public ``conn.pgconn`` (this package imports no
driver): only the Postgres dialect and store call it.
"""

from __future__ import annotations

import selectors
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator


def flush_output(conn: Any) -> None:
    """Send every byte libpq still holds for the server, reading its answers meanwhile.

    Reading while waiting to write keeps the server from blocking on a full
    socket of its own (its results), which would stall it before it read ours.
    """
    pgconn = conn.pgconn
    if pgconn.flush() == 0:
        return
    with selectors.DefaultSelector() as selector:
        selector.register(pgconn.socket, selectors.EVENT_READ | selectors.EVENT_WRITE)
        while pgconn.flush() != 0:
            for _key, events in selector.select():
                if events & selectors.EVENT_READ:
                    pgconn.consume_input()


@contextmanager
def synced(conn: Any) -> Iterator[None]:
    """A nested ``conn.pipeline()`` (it syncs on entry and exit), entered with nothing unsent."""
    flush_output(conn)
    with conn.pipeline():
        yield


def sync(conn: Any) -> None:
    """Wait for the answers of every statement queued so far: one Sync, one round trip.

    A nested pipeline (`synced`) syncs twice when statements wait: on
    entering, and again on leaving with nothing more to send. The open
    pipeline's own `sync()` (psycopg's ``Pipeline.sync``; the connection
    keeps it as ``_pipeline``) sends one; a connection not in pipeline
    mode takes the nested pipeline as before.
    """
    flush_output(conn)
    pipeline = getattr(conn, "_pipeline", None)
    if pipeline is None:
        with conn.pipeline():
            return
    pipeline.sync()


def settled(conn: Any, sql: str, args: Any) -> Any:
    """Run one statement and wait for its answer (its row count), with one Sync in a pipeline."""
    if getattr(conn, "_pipeline", None) is None:
        with synced(conn):
            return conn.execute(sql, args)
    cursor = conn.execute(sql, args)
    sync(conn)
    return cursor
