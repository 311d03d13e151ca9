"""Every way into a Postgres database refuses a wrong target with a typed error naming it.

`PostgresRuntime.connect`, `PostgresReader.connect` and `HarvestClient.connect`
each meet a missing database, a server that is not there, a malformed DSN
and a newer schema the same way: `NotAHarvestDatabase` or `SchemaTooNew`
naming the DSN (its password hidden) and saying why, nothing changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from harvest_engine import (
    HarvestClient,
    NotAHarvestDatabase,
    PostgresReader,
    PostgresRuntime,
    SchemaTooNew,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.pg_server import PostgresServer

ENTRY_POINTS: dict[str, Callable[[str], Any]] = {
    "runtime": PostgresRuntime.connect,
    "reader": PostgresReader.connect,
    "client": HarvestClient.connect,
}


@pytest.fixture(params=sorted(ENTRY_POINTS))
def connect(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """One way of opening a database by DSN."""
    return ENTRY_POINTS[str(request.param)]


def test_a_missing_database_is_refused_naming_it(
    pg_server: PostgresServer, connect: Callable[[str], Any]
) -> None:
    dsn = pg_server.dsn("no_such_db").replace("harvest@", "harvest:hunter2@")
    with pytest.raises(NotAHarvestDatabase) as caught:
        connect(dsn)
    message = str(caught.value)
    assert 'database "no_such_db" does not exist' in message
    assert "hunter2" not in message
    assert "harvest:***@" in caught.value.path  # type: ignore[attr-defined]


def test_a_server_that_is_not_there_is_refused_naming_the_dsn_and_the_cause(
    tmp_path: Path, connect: Callable[[str], Any]
) -> None:
    dsn = f"postgresql://harvest@/harvest?host={tmp_path}"
    with pytest.raises(NotAHarvestDatabase) as caught:
        connect(dsn)
    assert caught.value.path == dsn  # type: ignore[attr-defined]
    assert "No such file or directory" in str(caught.value)


def test_a_malformed_dsn_is_refused_before_any_connection(
    connect: Callable[[str], Any],
) -> None:
    with pytest.raises(NotAHarvestDatabase, match="not a valid Postgres DSN"):
        connect("host=db port=5432 =oops")


def test_a_newer_schema_is_refused_naming_its_version_and_left_untouched(
    pg_dsn: str, connect: Callable[[str], Any]
) -> None:
    PostgresRuntime.connect(pg_dsn).close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO harvest_schema_version (version) VALUES (99)")
    with pytest.raises(SchemaTooNew, match="schema version 99") as caught:
        connect(pg_dsn)
    assert caught.value.path in pg_dsn  # type: ignore[attr-defined]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        versions = conn.execute("SELECT MAX(version) FROM harvest_schema_version")
        assert versions.fetchone() == (99,)
