"""Shared fixtures: a manual clock and runtimes on real files in tmp_path."""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine import ManualClock, SqliteRuntime

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


@pytest.fixture
def open_rt(
    db_path: Path, clock: ManualClock
) -> Iterator[Callable[..., SqliteRuntime]]:
    """Open runtimes on `db_path` with the manual clock; all are closed at the end."""
    opened: list[SqliteRuntime] = []

    def open_(path: Path | None = None) -> SqliteRuntime:
        rt = SqliteRuntime.open(path or db_path, clock=clock)
        opened.append(rt)
        return rt

    yield open_
    for rt in opened:
        rt.close()
