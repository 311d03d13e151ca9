"""Listing runs: every filter, newest-first pages by rowid, no payloads, damaged rows, snapshots."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seeding import T0, seed_many, seed_run

from harvest_engine import ExecutionFilter, InvalidFilter, Stored
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from harvest_engine.store.records import ExecutionDetail


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore.open(db_path)
    yield opened
    opened.close()


def ids(page_runs: list[object]) -> list[str]:
    return [str(r.exec_id) for r in page_runs]  # type: ignore[attr-defined]


def test_a_listing_is_newest_first_and_pages_by_cursor(store: SqliteStore) -> None:
    created = seed_many(store, 7)
    flt = ExecutionFilter().limit(3)
    seen: list[str] = []
    pages = 0
    while True:
        page = store.list_executions(flt)
        seen += ids(page.executions)
        pages += 1
        if page.next is None:
            break
        flt = flt.before(page.next)
    assert seen == list(reversed(created))
    assert pages == 3


def test_an_exact_last_page_has_no_next_cursor(store: SqliteStore) -> None:
    seed_many(store, 4)
    page = store.list_executions(ExecutionFilter().limit(2))
    assert page.next is not None
    last = store.list_executions(ExecutionFilter().limit(2).before(page.next))
    assert len(last.executions) == 2
    assert last.next is None


def test_a_list_carries_no_payloads_but_visit_does(store: SqliteStore) -> None:
    exec_id = seed_run(store, state="COMPLETED", input={"id": 7}, output="done")
    (summary,) = store.list_executions(ExecutionFilter()).executions
    assert not hasattr(summary, "input")
    details = list(store.visit_executions(ExecutionFilter()))
    assert [str(d.exec_id) for d in details] == [exec_id]
    assert details[0].input == Stored.Value({"id": 7})
    assert details[0].output == Stored.Value("done")


def test_summary_fields_are_plain_values(store: SqliteStore) -> None:
    exec_id = seed_run(
        store,
        "order",
        workflow_id="order-7",
        state="FAILED",
        closed_at=T0 + timedelta(hours=1),
    )
    (run,) = store.list_executions(ExecutionFilter()).executions
    assert str(run.exec_id) == exec_id
    assert (run.workflow_name, run.workflow_id, run.state, run.attempt) == (
        "order",
        "order-7",
        "FAILED",
        1,
    )
    assert run.started_at == T0
    assert run.closed_at == T0 + timedelta(hours=1)
    assert run.memo == Stored.Null()


def test_name_id_and_exec_id_filters_match_exactly(store: SqliteStore) -> None:
    a = seed_run(store, "order", workflow_id="order-1")
    seed_run(store, "order", workflow_id="order-10")
    seed_run(store, "refund", workflow_id="order-1")
    assert (
        ids(store.list_executions(ExecutionFilter().workflow_name("refund")).executions)
        != []
    )
    by_key = ExecutionFilter().workflow_name("order").workflow_id("order-1")
    assert ids(store.list_executions(by_key).executions) == [a]
    assert ids(store.list_executions(ExecutionFilter().exec_id(a)).executions) == [a]


def test_prefix_filter_takes_wildcards_literally_and_case_sensitively(
    store: SqliteStore,
) -> None:
    hit = seed_run(store, workflow_id="50%_off:1")
    seed_run(store, workflow_id="50x_off:1")
    seed_run(store, workflow_id="50%_OFF:1")
    found = store.list_executions(ExecutionFilter().workflow_id_prefix("50%_off"))
    assert ids(found.executions) == [hit]


def test_several_states_match_any_of_them(store: SqliteStore) -> None:
    running = seed_run(store)
    failed = seed_run(store, state="FAILED")
    seed_run(store, state="COMPLETED")
    flt = ExecutionFilter().state("RUNNING").state("FAILED")
    assert set(ids(store.list_executions(flt).executions)) == {running, failed}


def test_time_window_is_inclusive_after_and_exclusive_before(
    store: SqliteStore,
) -> None:
    runs = seed_many(store, 5)  # started at T0 + 0..4 s
    flt = (
        ExecutionFilter()
        .started_after(T0 + timedelta(seconds=1))
        .started_before(T0 + timedelta(seconds=3))
    )
    assert ids(store.list_executions(flt).executions) == [runs[2], runs[1]]


def test_limit_is_cut_to_one_through_a_thousand(store: SqliteStore) -> None:
    seed_many(store, 3)
    assert len(store.list_executions(ExecutionFilter().limit(0)).executions) == 1
    assert ExecutionFilter().limit(5000).page_size == 1000
    assert ExecutionFilter().page_size == 100


def test_filter_limits_are_refused_by_name() -> None:
    with pytest.raises(InvalidFilter, match="unknown state"):
        ExecutionFilter().state("DONE")
    with pytest.raises(InvalidFilter, match="aware datetime"):
        ExecutionFilter().started_after(T0.replace(tzinfo=None))
    flt = ExecutionFilter()
    for i in range(64):
        flt = flt.search_attribute(f"k{i}", i)
    with pytest.raises(InvalidFilter, match="64 search attributes"):
        flt.search_attribute("one-more", 1)


@pytest.mark.parametrize("cursor", [2**63, -(2**63) - 1, 10**30])
def test_a_cursor_no_page_could_return_is_invalid_filter(
    store: SqliteStore, cursor: int
) -> None:
    with pytest.raises(InvalidFilter, match="cursor"):
        store.list_executions(ExecutionFilter().before(cursor))


def test_one_damaged_row_does_not_fail_a_page(store: SqliteStore) -> None:
    good = seed_run(store, memo={"owner": "ops"}, search_attributes={"tenant": "acme"})
    bad = seed_run(store)
    store.connection.execute(
        "UPDATE harvest_executions SET memo = ?, search_attributes = '[1, 2]', "
        "started_at = 'yesterday' WHERE exec_id = ?",
        (b"\xff\xfe", bad),
    )
    page = store.list_executions(ExecutionFilter())
    rows = {str(r.exec_id): r for r in page.executions}
    assert rows[good].memo == Stored.Value({"owner": "ops"})
    assert rows[bad].memo.is_unreadable
    assert rows[bad].search_attributes.is_unreadable
    assert rows[bad].started_at is None
    # A search-attribute filter skips the damaged row instead of failing.
    flt = ExecutionFilter().search_attribute("tenant", "acme")
    assert ids(store.list_executions(flt).executions) == [good]


def test_a_state_filter_seeks_on_the_state_index(store: SqliteStore) -> None:
    from harvest_engine.store.sql.dialect import SQLITE
    from harvest_engine.store.sql.listing import SUMMARY_COLUMNS, where_clause

    where, args = where_clause(ExecutionFilter().state("RUNNING").before(10), SQLITE)
    plan = store.connection.execute(
        f"EXPLAIN QUERY PLAN SELECT {', '.join(SUMMARY_COLUMNS)} FROM harvest_executions"
        f"{where} ORDER BY id DESC LIMIT 11",
        args,
    ).fetchall()
    text = " ".join(str(row[-1]) for row in plan)
    assert "harvest_executions_state" in text
    assert "SEARCH" in text


def test_a_visit_reads_one_snapshot_while_the_writer_commits(
    store: SqliteStore, db_path: Path
) -> None:
    seed_many(store, 3)
    other = sqlite3.connect(db_path, timeout=5)
    seen: list[ExecutionDetail] = []

    def commit_between_rows(detail: ExecutionDetail) -> None:
        seen.append(detail)
        if len(seen) == 1:
            other.execute("UPDATE harvest_executions SET state = 'FAILED'")
            other.commit()

    # The store's own connection holds the snapshot; another connection writes.
    for detail in store.visit_executions(ExecutionFilter()):
        commit_between_rows(detail)
    other.close()
    assert [d.state for d in seen] == ["RUNNING"] * 3
    assert {r.state for r in store.list_executions(ExecutionFilter()).executions} == {
        "FAILED"
    }


def test_counts_by_state_names_every_state(store: SqliteStore) -> None:
    seed_many(store, 2)
    seed_run(store, state="COMPLETED")
    counts = store.counts_by_state()
    assert counts["RUNNING"] == 2
    assert counts["COMPLETED"] == 1
    assert counts["TIMED_OUT"] == 0
    assert set(counts) >= {
        "RUNNING",
        "FAILED",
        "CANCELLED",
        "TERMINATED",
        "CONTINUED_AS_NEW",
    }


@settings(max_examples=40, deadline=None)
@given(
    limit=st.integers(min_value=-5, max_value=30),
    count=st.integers(min_value=0, max_value=25),
)
def test_paging_visits_every_row_once_for_any_limit(
    tmp_path_factory: pytest.TempPathFactory, limit: int, count: int
) -> None:
    path = tmp_path_factory.mktemp("paging") / "p.db"
    opened = SqliteStore.open(path)
    try:
        created = seed_many(opened, count)
        flt = ExecutionFilter().limit(limit)
        seen: list[str] = []
        while True:
            page = opened.list_executions(flt)
            assert len(page.executions) <= max(1, limit)
            seen += ids(page.executions)
            if page.next is None:
                break
            flt = flt.before(page.next)
        assert seen == list(reversed(created))
    finally:
        opened.close()


# -- every filter against a plain-Python model of it --------------------------

NAMES = ("order", "Order", "ship")
WORKFLOW_IDS = ("a", "ab", "a%", "a_b", "B", "")
STATES = ("RUNNING", "COMPLETED", "FAILED", "CANCELLED")
ATTR_VALUES: tuple[object, ...] = (1, 1.0, 2, "1", True, False, None, "acme", 2**62)


@pytest.fixture(scope="module")
def modelled(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SqliteStore, list[dict[str, object]]]]:
    """48 runs whose fields cycle through the values above, and what was stored."""
    opened = SqliteStore.open(tmp_path_factory.mktemp("model") / "m.db")
    runs: list[dict[str, object]] = []
    for i in range(48):
        attrs: dict[str, object] = {"k": ATTR_VALUES[i % len(ATTR_VALUES)]}
        if i % 4 == 0:
            attrs["t"] = ATTR_VALUES[(i // 4) % len(ATTR_VALUES)]
        run = {
            "name": NAMES[i % 3],
            "workflow_id": WORKFLOW_IDS[i % 6] + str(i % 2),
            "state": STATES[(i // 2) % 4],
            "started_at": T0 + timedelta(minutes=(i * 7) % 30),
            "attrs": attrs,
        }
        exec_id = seed_run(
            opened,
            str(run["name"]),
            workflow_id=str(run["workflow_id"]),
            state=str(run["state"]),
            started_at=run["started_at"],  # type: ignore[arg-type]
            search_attributes=attrs,
        )
        runs.append({**run, "exec_id": exec_id})
    yield opened, runs
    opened.close()


def _equal_json(stored: object, wanted: object) -> bool:
    # JSON types: a bool is not a number, a number compares as a number.
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return type(stored) is type(wanted) and stored == wanted
    if isinstance(stored, (int, float)) and isinstance(wanted, (int, float)):
        return stored == wanted
    return type(stored) is type(wanted) and stored == wanted


@settings(max_examples=150, deadline=None)
@given(
    name=st.none() | st.sampled_from(NAMES),
    workflow_id=st.none()
    | st.sampled_from([w + s for w in WORKFLOW_IDS for s in "01"]),
    prefix=st.none() | st.sampled_from(["a", "a%", "a_", "A", "", "ab1"]),
    states=st.lists(st.sampled_from(STATES), max_size=3),
    after=st.none() | st.integers(0, 30),
    before=st.none() | st.integers(0, 30),
    attrs=st.dictionaries(
        st.sampled_from(["k", "t", "missing"]), st.sampled_from(ATTR_VALUES)
    ),
    limit=st.integers(1, 7),
)
def test_every_filter_combination_returns_what_a_plain_model_selects(
    modelled: tuple[SqliteStore, list[dict[str, object]]],
    name: str | None,
    workflow_id: str | None,
    prefix: str | None,
    states: list[str],
    after: int | None,
    before: int | None,
    attrs: dict[str, object],
    limit: int,
) -> None:
    opened, runs = modelled
    flt = ExecutionFilter().limit(limit)
    if name is not None:
        flt = flt.workflow_name(name)
    if workflow_id is not None:
        flt = flt.workflow_id(workflow_id)
    if prefix is not None:
        flt = flt.workflow_id_prefix(prefix)
    if states:
        flt = flt.state(*states)
    if after is not None:
        flt = flt.started_after(T0 + timedelta(minutes=after))
    if before is not None:
        flt = flt.started_before(T0 + timedelta(minutes=before))
    for key, value in attrs.items():
        flt = flt.search_attribute(key, value)  # type: ignore[arg-type]

    def selected(run: dict[str, object]) -> bool:
        started = run["started_at"]
        stored: dict[str, object] = run["attrs"]  # type: ignore[assignment]
        return (
            (name is None or run["name"] == name)
            and (workflow_id is None or run["workflow_id"] == workflow_id)
            and (prefix is None or str(run["workflow_id"]).startswith(prefix))
            and (not states or run["state"] in states)
            and (after is None or started >= T0 + timedelta(minutes=after))  # type: ignore[operator]
            and (before is None or started < T0 + timedelta(minutes=before))  # type: ignore[operator]
            and all(k in stored and _equal_json(stored[k], v) for k, v in attrs.items())
        )

    expected = [str(r["exec_id"]) for r in reversed(runs) if selected(r)]
    seen: list[str] = []
    while True:
        page = opened.list_executions(flt)
        assert len(page.executions) <= limit
        seen += ids(page.executions)
        if page.next is None:
            break
        flt = flt.before(page.next)
    assert seen == expected
