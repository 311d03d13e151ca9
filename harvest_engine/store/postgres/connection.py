"""Connecting to Postgres: a DSN to a psycopg connection, its errors to the engine's typed errors.

No raw psycopg error escapes a public call: a wrong DSN, an unreachable
server or a missing database is `NotAHarvestDatabase` naming the DSN (its
password hidden) and saying why.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from harvest_engine.errors import NotAHarvestDatabase, StorageError
from harvest_engine.store.postgres.codec_connection import open_codec_connection

if TYPE_CHECKING:
    from harvest_engine.codecs import PayloadCodec

# A worker gives up on a server that does not answer within this many seconds.
CONNECT_TIMEOUT = 10

# harvest's statements find a few rows by key (`exec_id = ANY(...)`, a run's
# events). On a young database the tables have no statistics yet and, with
# the default random_page_cost of 4 (a spinning disk's), the planner reads
# whole tables instead of their indexes: every pass then scans every run and
# every event, O(runs) a statement (a 1,000-run queue spent half its server
# time so). A session prices an index read as on an SSD (1.1) unless someone
# chose the cost: the server's configuration, ALTER DATABASE or ROLE, or the
# DSN's `options` (any source but the built-in default) wins. A SET after
# connecting, not a startup option: poolers such as PgBouncer refuse those.
_INDEX_READS = (
    "UPDATE pg_settings SET setting = '1.1' "
    "WHERE name = 'random_page_cost' AND source = 'default'"
)


def redact(dsn: str) -> str:
    """The DSN as errors and logs may show it: a password replaced by ***."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", dsn)
    if "password" not in params:
        return dsn
    if "://" in dsn:
        return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", dsn)
    params["password"] = "***"
    return make_conninfo("", **params)


def _open(dsn: str, codec: PayloadCodec | None) -> psycopg.Connection[tuple[Any, ...]]:
    """psycopg.connect, through CodecPgConnection when there is a codec; then `_INDEX_READS`."""
    if codec is None:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    else:
        conn = open_codec_connection(
            dsn, codec, autocommit=True, connect_timeout=CONNECT_TIMEOUT
        )
    try:
        conn.execute(_INDEX_READS)
    except BaseException:
        conn.close()
        raise
    return conn


def reconnect(
    dsn: str, codec: PayloadCodec | None = None
) -> psycopg.Connection[tuple[Any, ...]]:
    """A new connection for a worker whose old one broke; StorageError while the server is away.

    The DSN worked when the worker connected, so a failure now is the
    server's or the network's (a restart, a failover), not a wrong DSN.
    """
    try:
        return _open(dsn, codec)
    except psycopg.Error as exc:
        lines = str(exc).strip().splitlines()
        raise StorageError(
            path=redact(dsn),
            reason=f"cannot reconnect: {lines[0] if lines else type(exc).__name__}",
        ) from exc


def connect(
    dsn: str, codec: PayloadCodec | None = None
) -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection (transactions are explicit); typed error if it cannot be made."""
    if not isinstance(dsn, str) or not dsn.strip():
        raise NotAHarvestDatabase(path=repr(dsn), reason="a Postgres DSN is required")
    try:
        conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise NotAHarvestDatabase(
            path=redact(dsn), reason=f"not a valid Postgres DSN: {exc}"
        ) from exc
    try:
        return _open(dsn, codec)
    except psycopg.Error as exc:
        # libpq's message names the cause on its first line ("database "x" does
        # not exist", "No such file or directory") and may add a hint line.
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = " ".join(lines) if lines else type(exc).__name__
        raise NotAHarvestDatabase(
            path=redact(dsn), reason=f"cannot connect: {reason}"
        ) from exc
