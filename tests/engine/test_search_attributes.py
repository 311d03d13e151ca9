"""Search-attribute filters: equality by JSON type, numbers as numbers, refused values."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seeding import seed_run

from harvest_engine import ExecutionFilter, InvalidSearchAttribute
from harvest_engine.filters import SEARCH_NUMBER_BOUND, check_search_value
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore.open(db_path)
    yield opened
    opened.close()


def matches(store: SqliteStore, key: str, value: Any) -> list[str]:
    page = store.list_executions(ExecutionFilter().search_attribute(key, value))
    return [str(r.exec_id) for r in page.executions]


def test_an_integer_filter_matches_an_equal_float_and_back(store: SqliteStore) -> None:
    as_int = seed_run(store, search_attributes={"n": 1})
    as_float = seed_run(store, search_attributes={"n": 1.0})
    seed_run(store, search_attributes={"n": 2})
    assert set(matches(store, "n", 1)) == {as_int, as_float}
    assert set(matches(store, "n", 1.0)) == {as_int, as_float}


def test_a_number_never_matches_its_text_or_a_boolean(store: SqliteStore) -> None:
    text = seed_run(store, search_attributes={"v": "1"})
    true = seed_run(store, search_attributes={"v": True})
    number = seed_run(store, search_attributes={"v": 1})
    assert matches(store, "v", 1) == [number]
    assert matches(store, "v", "1") == [text]
    assert matches(store, "v", True) == [true]


def test_null_matches_a_stored_null_not_a_missing_key(store: SqliteStore) -> None:
    null = seed_run(store, search_attributes={"stage": None})
    seed_run(store, search_attributes={"other": 1})
    seed_run(store)
    assert matches(store, "stage", None) == [null]


def test_keys_with_json_path_characters_are_plain_keys(store: SqliteStore) -> None:
    odd = seed_run(store, search_attributes={'a."b[0]': "x", "a": {"b": "x"}})
    assert matches(store, 'a."b[0]', "x") == [odd]
    assert matches(store, "a.b", "x") == []


def test_several_attributes_combine_with_and(store: SqliteStore) -> None:
    both = seed_run(store, search_attributes={"tenant": "acme", "tier": 2})
    seed_run(store, search_attributes={"tenant": "acme", "tier": 3})
    flt = (
        ExecutionFilter().search_attribute("tenant", "acme").search_attribute("tier", 2)
    )
    assert [str(r.exec_id) for r in store.list_executions(flt).executions] == [both]


@pytest.mark.parametrize(
    "value",
    [2**63, -(2**63), float(2**63), 1e300, math.inf, math.nan, [1], {"a": 1}, b"x"],
)
def test_values_a_filter_cannot_compare_are_refused(value: Any) -> None:
    with pytest.raises(InvalidSearchAttribute):
        ExecutionFilter().search_attribute("k", value)


def test_the_largest_exact_integer_is_accepted() -> None:
    assert check_search_value("k", 2**63 - 1) == 2**63 - 1


@settings(max_examples=60)
@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_every_number_below_the_bound_is_accepted_and_the_rest_refused(
    n: float,
) -> None:
    if abs(n) < SEARCH_NUMBER_BOUND:
        assert check_search_value("k", n) == n
    else:
        with pytest.raises(InvalidSearchAttribute, match="2\\^63"):
            check_search_value("k", n)


def test_text_holding_nul_is_refused_where_it_would_be_written_or_searched(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with pytest.raises(InvalidSearchAttribute, match="NUL"):
        ExecutionFilter().search_attribute("k", "a\x00b")
    opened = SqliteStore.open(tmp_path_factory.mktemp("nul") / "sa.db")
    try:
        cut = seed_run(
            opened, search_attributes={"k": "a\x00b"}
        )  # a foreign writer's row
        plain = seed_run(opened, search_attributes={"k": "a"})
        assert matches(opened, "k", "a") == [
            plain
        ]  # not the row JSON1 would cut to "a"
        assert cut not in matches(opened, "k", "a")
    finally:
        opened.close()


@settings(max_examples=40, deadline=None)
@given(
    stored=st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.text(max_size=5),
    ),
    probe=st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=5),
        st.sampled_from(["", "a"]),
    ),
)
def test_equality_follows_json_types(
    tmp_path_factory: pytest.TempPathFactory, stored: Any, probe: Any
) -> None:
    opened = SqliteStore.open(tmp_path_factory.mktemp("sa") / "sa.db")
    try:
        # seed_run writes like a foreign writer: stored text may hold NUL,
        # which JSON1 cuts at, so such a value never matches text.
        exec_id = seed_run(opened, search_attributes={"k": stored})
        unsearchable = isinstance(stored, str) and "\x00" in stored
        expected = type(stored) is type(probe) and stored == probe and not unsearchable
        assert (matches(opened, "k", probe) == [exec_id]) is expected
    finally:
        opened.close()
