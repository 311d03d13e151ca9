"""The shared SQL's Dialect: one text with SQLite's marks, rendered once per database."""

from __future__ import annotations

import pytest

from harvest_engine.store.sql.dialect import POSTGRES, SQLITE
from harvest_engine.store.sql.reads import POSTGRES_READS, SQLITE_READS


def test_a_statement_renders_with_each_databases_parameter_marks() -> None:
    text = "SELECT 1 FROM t WHERE a = ? AND b > :now AND c::text = ? AND d IN (:skip0)"

    assert SQLITE.render(text) == text
    assert POSTGRES.render(text) == (
        "SELECT 1 FROM t WHERE a = %s AND b > %(now)s AND c::text = %s "
        "AND d IN (%(skip0)s)"
    )


def test_a_literal_percent_is_refused_where_psycopg_would_misread_it() -> None:
    with pytest.raises(ValueError, match="literal %"):
        POSTGRES.render("SELECT 1 FROM t WHERE a LIKE 'x%' AND b = ?")


def test_a_list_binds_one_mark_per_value_on_sqlite_and_one_array_on_postgres() -> None:
    assert SQLITE.in_list(["a", "b"]) == ("IN (?, ?)", ["a", "b"])
    assert POSTGRES.in_list(["a", "b"]) == ("= ANY(%s)", [["a", "b"]])


def test_the_shared_reads_are_rendered_once_when_built() -> None:
    # A call runs a ready string, built when the module was imported.
    assert SQLITE_READS.events_sql.count("?") == 2
    assert POSTGRES_READS.events_sql.count("%s") == 2
    assert POSTGRES_READS.execution_locked_sql.endswith(" FOR UPDATE")
    assert SQLITE_READS.execution_locked_sql == SQLITE_READS.execution_sql
