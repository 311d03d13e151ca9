"""Schema versions on Postgres: a version table, forward migrations, a newer schema refused untouched.

Several workers may open one database at once: the migration runs under a
transaction-scoped advisory lock, so exactly one of them creates or upgrades
the schema and the others wait, then see it done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import NotAHarvestDatabase, SchemaTooNew
from harvest_engine.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    import psycopg

# pg_advisory_xact_lock key of schema changes ("harvest" in ASCII, as a number).
MIGRATION_LOCK = 0x68617276657374
VERSION_TABLE = "harvest_schema_version"


def read_version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The database's schema version; 0 for a database without harvest tables."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (VERSION_TABLE,)
    ).fetchone()
    if row is None or not row[0]:
        return 0
    version = conn.execute(f"SELECT MAX(version) FROM {VERSION_TABLE}").fetchone()
    return int(version[0]) if version is not None and isinstance(version[0], int) else 0


def migrate(conn: psycopg.Connection[tuple[object, ...]], where: str) -> None:
    """Bring the schema to SCHEMA_VERSION; refuse a newer one and a foreign database.

    Raises:
        SchemaTooNew: a newer harvest wrote this database (nothing is changed).
        NotAHarvestDatabase: the database holds other tables but no harvest schema.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        version = read_version(conn)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(path=where, found=version, supported=SCHEMA_VERSION)
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            _refuse_foreign(conn, where)
            conn.execute(
                f"CREATE TABLE {VERSION_TABLE} (version INTEGER PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
        for step in range(version, SCHEMA_VERSION):
            conn.execute(MIGRATIONS[step].encode())
            conn.execute(
                f"INSERT INTO {VERSION_TABLE} (version) VALUES (%s)", (step + 1,)
            )


def _refuse_foreign(conn: psycopg.Connection[tuple[object, ...]], where: str) -> None:
    """A database with harvest-named tables but no version is not ours to touch."""
    row = conn.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = current_schema() AND table_name LIKE 'harvest%%' LIMIT 1"
    ).fetchone()
    if row is not None:
        raise NotAHarvestDatabase(
            path=where,
            reason=f"it has a {row[0]} table but no {VERSION_TABLE}",
        )
