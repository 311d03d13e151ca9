"""Fixtures of the HTTP API tests: every test runs on both stores, through a runtime and through a client."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.engine.served_store import ServedStore
from tests.http.served_api import ApiSetup

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.pg_server import PostgresServer


@pytest.fixture(params=["runtime", "client"])
def via(request: pytest.FixtureRequest) -> str:
    """What create_app is given: the serving runtime itself, or the store's path / URL."""
    return str(request.param)


@pytest.fixture
def api_setup(
    request: pytest.FixtureRequest, store: str, via: str, tmp_path: Path
) -> Iterator[ApiSetup]:
    """A store of the test's kind, its runtime registered with the test flows."""
    if store == "postgres":
        server: PostgresServer = request.getfixturevalue("pg_server")
        dsn = server.create_database()
        served = ServedStore(dsn, postgres=True)
        yield ApiSetup(served, via)
        served.rt.close()
        server.drop_database(dsn)
    else:
        served = ServedStore(str(tmp_path / "flows.db"), postgres=False)
        yield ApiSetup(served, via)
        served.rt.close()
