"""Shared fixtures: a manual clock, runtimes on real files in tmp_path, a Postgres server."""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import ManualClock, SqliteReader, SqliteRuntime
from harvest_engine.runtime.postgres_runtime import PostgresRuntime
from harvest_engine.store.postgres.reader import PostgresReader
from tests.pg_server import PostgresServer, postgres_bin
from tests.stores import Databases

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` engine tests on a fresh asyncio loop (no pytest-asyncio: see QT-NOTES)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs: dict[str, Any] = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(pyfuncitem.obj(**kwargs))
    return True


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when a test says so."""
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A database file path in the test's own folder."""
    return tmp_path / "workflows.db"


STORES = ("sqlite", "postgres")


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Drop the postgres case of tests marked `sqlite_only` (each mark says why)."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        store = callspec.params.get("store") if callspec is not None else None
        if store == "postgres" and item.get_closest_marker("sqlite_only"):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    """Which store the runtimes of this test run on: every engine test runs on both."""
    return str(request.param)


@pytest.fixture
def databases(request: pytest.FixtureRequest, store: str) -> Iterator[Databases]:
    """The test's databases on its store (see `Databases`)."""
    server: PostgresServer | None = (
        request.getfixturevalue("pg_server") if store == "postgres" else None
    )
    found = Databases(server)
    yield found
    found.release()


@pytest.fixture
def open_rt(
    databases: Databases, db_path: Path, clock: ManualClock
) -> Iterator[Callable[..., SqliteRuntime]]:
    """Open runtimes on `db_path` (or its Postgres database) with the manual clock.

    All are closed at the end.
    """
    opened: list[SqliteRuntime] = []

    def open_(path: Path | None = None) -> SqliteRuntime:
        target = path or db_path
        rt: SqliteRuntime
        if databases.server is None:
            rt = SqliteRuntime.open(target, clock=clock)
        else:
            rt = PostgresRuntime.connect(databases.dsn(target), clock=clock)
        opened.append(rt)
        return rt

    yield open_
    for rt in opened:
        rt.close()


@pytest.fixture
def open_reader(
    databases: Databases, db_path: Path
) -> Iterator[Callable[..., SqliteReader | PostgresReader]]:
    """Open the read-only reader of `db_path` (or of its Postgres database); closed at the end."""
    opened: list[SqliteReader | PostgresReader] = []

    def open_(path: Path | None = None) -> SqliteReader | PostgresReader:
        target = path or db_path
        reader: SqliteReader | PostgresReader
        if databases.server is None:
            reader = SqliteReader.open(target)
        else:
            reader = PostgresReader.connect(databases.dsn(target))
        opened.append(reader)
        return reader

    yield open_
    for reader in opened:
        reader.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server for this test process (one per xdist worker).

    Skipped only when PostgreSQL is not installed and this is not CI: `make
    system-deps` installs it, and CI (CI=true) must run these tests.
    """
    bindir = postgres_bin()
    if bindir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed: run make system-deps")
        pytest.skip("PostgreSQL is not installed (make system-deps installs it)")
    server = PostgresServer(bindir)
    yield server
    server.stop()


@pytest.fixture
def pg_dsn(pg_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the test server; dropped after the test."""
    dsn = pg_server.create_database()
    yield dsn
    pg_server.drop_database(dsn)
