"""The Runtime facade names no store: a failure inside it is said by the store it holds."""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from harvest_engine import Runtime, StorageError
from harvest_engine.runtime.operating import reads
from harvest_engine.store.postgres.store import PostgresStore

Open = Callable[..., Runtime]


def _fail_counts_with(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """Make the wing behind `rt.counts_by_state()` raise `error` (below the stores' own guards)."""

    def failing(*_args: Any, **_kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(reads, "counts_by_state", failing)


def _driver_error(rt: Runtime) -> Exception:
    """An error of the runtime's own store's driver, as the store would meet it."""
    if isinstance(rt.store, PostgresStore):
        return psycopg.OperationalError("server closed the connection unexpectedly")
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorcode = sqlite3.SQLITE_IOERR  # type: ignore[attr-defined]
    return error


def test_the_stores_driver_error_is_said_by_that_stores_boundary(
    open_rt: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_rt()
    error = _driver_error(rt)
    _fail_counts_with(monkeypatch, error)
    with pytest.raises(StorageError) as raised:
        rt.counts_by_state()
    assert raised.value.__cause__ is error


def test_an_os_failure_is_a_storage_error_on_either_store(
    open_rt: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_rt()
    error = OSError(errno.ENOSPC, "No space left on device")
    _fail_counts_with(monkeypatch, error)
    with pytest.raises(StorageError, match="No space left on device") as raised:
        rt.counts_by_state()
    assert raised.value.__cause__ is error


def test_the_other_stores_driver_error_is_not_this_stores_to_translate(
    open_rt: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Postgres runtime never reads a sqlite3 error as its own, nor SQLite a psycopg one:
    # the facade asks the store it holds, not a store it was written against.
    rt = open_rt()
    foreign: Exception = (
        sqlite3.OperationalError("disk I/O error")
        if isinstance(rt.store, PostgresStore)
        else psycopg.OperationalError("server closed the connection unexpectedly")
    )
    _fail_counts_with(monkeypatch, foreign)
    with pytest.raises(type(foreign)) as raised:
        rt.counts_by_state()
    assert raised.value is foreign
    assert raised.value.__cause__ is None


def test_an_error_that_is_no_storage_failure_passes_unchanged(
    open_rt: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = open_rt()
    error = KeyError("a bug, not the disk")
    _fail_counts_with(monkeypatch, error)
    with pytest.raises(KeyError) as raised:
        rt.counts_by_state()
    assert raised.value is error
    assert raised.value.__cause__ is None
