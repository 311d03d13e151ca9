"""Listing by parent and by close time: ExecutionFilter().parent(id).closed_after(t).closed_before(t)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from seeding import T0, seed_run

from harvest_engine import ExecutionFilter, ExecutionId, InvalidFilter
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore.open(db_path)
    yield opened
    opened.close()


def listed(store: SqliteStore, flt: ExecutionFilter) -> list[str]:
    return [str(r.exec_id) for r in store.list_executions(flt).executions]


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_parent_lists_only_that_runs_children_newest_first(store: SqliteStore) -> None:
    parent = seed_run(store)
    other = seed_run(store)
    first = seed_run(store, parent_exec_id=parent)
    seed_run(store, parent_exec_id=other)
    second = seed_run(store, parent_exec_id=parent, state="COMPLETED")

    assert listed(store, ExecutionFilter().parent(parent)) == [second, first]
    assert listed(store, ExecutionFilter().parent(ExecutionId.parse(parent))) == [
        second,
        first,
    ]
    assert listed(store, ExecutionFilter().parent(first)) == []


def test_closed_after_is_inclusive_closed_before_exclusive_and_running_never_match(
    store: SqliteStore,
) -> None:
    early = seed_run(store, state="COMPLETED", closed_at=at(10))
    middle = seed_run(store, state="FAILED", closed_at=at(20))
    late = seed_run(store, state="CANCELLED", closed_at=at(30))
    seed_run(store)

    assert listed(store, ExecutionFilter().closed_after(at(20))) == [late, middle]
    assert listed(store, ExecutionFilter().closed_before(at(20))) == [early]
    window = ExecutionFilter().closed_after(at(10)).closed_before(at(30))
    assert listed(store, window) == [middle, early]


def test_parent_and_close_window_combine(store: SqliteStore) -> None:
    parent = seed_run(store)
    seed_run(store, parent_exec_id=parent, state="COMPLETED", closed_at=at(5))
    recent = seed_run(store, parent_exec_id=parent, state="COMPLETED", closed_at=at(50))
    seed_run(store, parent_exec_id=parent)
    seed_run(store, state="COMPLETED", closed_at=at(50))

    flt = ExecutionFilter().parent(parent).closed_after(at(40))
    assert listed(store, flt) == [recent]


@pytest.mark.parametrize(
    "build",
    [
        lambda f: f.parent(""),
        lambda f: f.parent(None),
        lambda f: f.closed_after(datetime(2030, 1, 1)),  # noqa: DTZ001 -- naive on purpose
        lambda f: f.closed_before("2030-01-01"),
    ],
)
def test_a_bad_parent_or_close_time_is_refused(build: Any) -> None:
    with pytest.raises(InvalidFilter):
        build(ExecutionFilter())
