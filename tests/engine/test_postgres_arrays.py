"""The array parameters harvest dumps itself (store/postgres/arrays.py) reach Postgres as given.

Texts are escaped in one pass over the joined items: quotes, backslashes,
commas, braces, the word NULL and empty items must all arrive intact.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from harvest_engine.store.postgres.arrays import (
    Ints,
    MaybeFloats,
    MaybeInts,
    MaybeTexts,
    Texts,
)

TRICKY = [
    'a "quoted" word',
    "back\\slash\\",
    "",
    "NULL",
    "{braces, and commas}",
    " spaced ",
    '{"json": ["x", 1]}',
    "ünïcödé ✓",
    '\\"',
]


def _round_trip(dsn: str, value: Any, kind: str) -> Any:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(f"SELECT %s::{kind}[]", (value,)).fetchone()
    assert row is not None
    return row[0]


def test_texts_and_numbers_arrive_as_given(pg_dsn: str) -> None:
    assert _round_trip(pg_dsn, Texts(TRICKY), "text") == TRICKY
    assert _round_trip(pg_dsn, Texts([]), "text") == []
    assert _round_trip(pg_dsn, Texts(["one"]), "text") == ["one"]
    maybe = [None, *TRICKY, None]
    assert _round_trip(pg_dsn, MaybeTexts(maybe), "text") == maybe
    assert _round_trip(pg_dsn, MaybeTexts(TRICKY), "text") == TRICKY
    assert _round_trip(pg_dsn, Ints([1, -2, 2**40]), "bigint") == [1, -2, 2**40]
    assert _round_trip(pg_dsn, MaybeInts([None, 3]), "integer") == [None, 3]
    floats = [None, 1.25, 3, 1e-7]
    assert _round_trip(pg_dsn, MaybeFloats(floats), "double precision") == floats


def test_a_text_holding_nul_is_refused_not_split(pg_dsn: str) -> None:
    with pytest.raises(psycopg.DataError):
        _round_trip(pg_dsn, Texts(["a\x00b", "c"]), "text")
