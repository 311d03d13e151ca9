"""A client's connection to a served Postgres database: it queues command rows and reads replies.

The Postgres twin of the SQLite `CommandQueue`: it runs no schema step (a
worker created the schema), and each command is one short transaction, so a
client killed mid-write leaves its command wholly queued or absent. The
insert notifies the serving workers (LISTEN/NOTIFY), which wake at once, and
the client hears its reply and its runs' ends the same way (`watch`,
client_notices.py) instead of polling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import psycopg

from harvest_engine.errors import NotAHarvestDatabase, SchemaTooNew, StorageError
from harvest_engine.store.postgres import heartbeat
from harvest_engine.store.postgres.client_notices import Notices
from harvest_engine.store.postgres.connection import connect, redact
from harvest_engine.store.postgres.migrations import read_version
from harvest_engine.store.postgres.notify import COMMAND_NOTICE
from harvest_engine.store.postgres.schema import SCHEMA_VERSION
from harvest_engine.store.sql.commands import POSTGRES_COMMANDS
from harvest_engine.timestamps import micros

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from datetime import datetime

    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.store.postgres.client_notices import Watch


# The insert and the notice are one autocommit statement (one round trip);
# the notice names the row and the run the command signals (or nothing), so
# the serving worker claims it without reading the queue first.
_SUBMIT = (
    "WITH queued AS ("
    + POSTGRES_COMMANDS.insert
    + f" RETURNING id) SELECT pg_notify('harvest_wake', '{COMMAND_NOTICE}:' || id "
    "|| ':' || %s) FROM queued"
)


# A queued command's commit does not wait for its WAL flush: nobody is told
# of the command before its reply, and the worker commits the reply with
# synchronous_commit on, which flushes the WAL up to its own commit record,
# the command's earlier records with it. A server crash before that loses a
# command no caller was answered for (a retry under its id queues it again).
# A withdrawal waits for its flush (`withdraw`).
QUEUE_SYNCHRONOUS_COMMIT = "off"


def submit(  # noqa: PLR0913 - the row's four values, and the run it signals
    conn: psycopg.Connection[tuple[Any, ...]],
    command_id: str,
    kind: str,
    args: str,
    now: datetime,
    run: str | None = None,
) -> bool:
    """Queue one command and wake the serving workers: one statement, wholly done or not.

    The insert and the notice are one autocommit statement (one round trip):
    the notice goes out when the row is committed. A command id already
    queued (a retry) queues nothing: False (the SQLite store's rule).

    Raises:
        ValueError: the id names a different command (nothing is queued).
    """
    row = conn.execute(
        _SUBMIT, (command_id, kind, args, micros(now), run or "")
    ).fetchone()
    if row is not None:
        return True
    POSTGRES_COMMANDS.refuse_held(conn, command_id, kind, args)
    return False


class PostgresCommandQueue:
    """The command table of one database, as a client in another process sees it."""

    def __init__(
        self, path: str, conn: psycopg.Connection[tuple[Any, ...]], dsn: str
    ) -> None:
        """Use `PostgresCommandQueue.connect(dsn)`."""
        self.path = path
        self._conn = conn
        self._notices = Notices(dsn)

    @classmethod
    def connect(
        cls, dsn: str, *, codec: PayloadCodec | None = None
    ) -> PostgresCommandQueue:
        """Connect to the database's command queue.

        Raises:
            NotAHarvestDatabase: a wrong DSN, an unreachable server, a missing
                database, or one no worker has created the schema in.
            SchemaTooNew: written by a newer harvest.
        """
        conn = connect(dsn, codec)
        where = redact(dsn)
        try:
            version = read_version(conn)
        except psycopg.Error as exc:
            conn.close()
            raise NotAHarvestDatabase(path=where, reason=str(exc).strip()) from exc
        if version == 0:
            conn.close()
            raise NotAHarvestDatabase(
                path=where,
                reason="it has no harvest schema; connect a PostgresRuntime once to create it",
            )
        if version > SCHEMA_VERSION:
            conn.close()
            raise SchemaTooNew(path=where, found=version, supported=SCHEMA_VERSION)
        try:
            conn.execute(f"SET synchronous_commit = {QUEUE_SYNCHRONOUS_COMMIT}")
        except psycopg.Error as exc:
            conn.close()
            raise NotAHarvestDatabase(path=where, reason=str(exc).strip()) from exc
        return cls(where, conn, dsn)

    def watch(self, key: str) -> AbstractContextManager[Watch]:
        """Hear the notices about `key` (a command id or a run id) inside the block.

        Enter it before the write or the read it waits on: a notice of any
        commit after entering reaches the block's `Watch`.
        """
        return self._notices.watch(key)

    def submit(
        self,
        command_id: str,
        kind: str,
        args: str,
        now: datetime,
        run: str | None = None,
    ) -> bool:
        """Queue one command and wake the serving workers; False when its id was queued already.

        `run`: the run the command signals, named in the notice (the worker
        locks it with the claim).

        Raises:
            ValueError: the id names a different command (nothing is queued).
        """
        try:
            return submit(self._conn, command_id, kind, args, now, run)
        except psycopg.Error as exc:
            self._fail(exc)

    def reply(self, command_id: str) -> tuple[bool, str | None] | None:
        """(applied, reply JSON) of a command; None when no row has this id."""
        try:
            return POSTGRES_COMMANDS.reply(self._conn, command_id)
        except psycopg.Error as exc:
            self._fail(exc)

    def withdraw(self, command_id: str) -> bool:
        """Remove the command if no worker applied it yet; False when no queued row went.

        Flushed before it returns: a withdrawal the caller was told of must
        not come undone.
        """
        try:
            self._conn.execute("SET synchronous_commit = on")
            try:
                return POSTGRES_COMMANDS.withdraw(self._conn, command_id)
            finally:
                self._conn.execute(
                    f"SET synchronous_commit = {QUEUE_SYNCHRONOUS_COMMIT}"
                )
        except psycopg.Error as exc:
            self._fail(exc)

    def settle_refused(self, command_id: str) -> bool:
        """Remove a refused command once its reply was read; False when it is not one."""
        try:
            return POSTGRES_COMMANDS.settle_refused(self._conn, command_id)
        except psycopg.Error as exc:
            self._fail(exc)

    def served_ago(self) -> float | None:
        """Seconds since a worker last beat (the server's clock); None when none ever served."""
        try:
            return heartbeat.served_ago(self._conn)
        except psycopg.Error as exc:
            self._fail(exc)

    def data_version(self) -> int:
        """Changes whenever a worker commits a write to the database."""
        try:
            row = self._conn.execute(
                "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
            ).fetchone()
        except psycopg.Error as exc:
            self._fail(exc)
        return int(row[0]) if row is not None else 0

    def close(self) -> None:
        """Close the connections (safe to call twice)."""
        self._notices.close()
        self._conn.close()

    def _fail(self, exc: psycopg.Error) -> NoReturn:
        """A typed error for a failed queue read or write (nothing was queued)."""
        raise StorageError(
            path=self.path, reason=f"the command queue failed: {exc}"
        ) from exc
