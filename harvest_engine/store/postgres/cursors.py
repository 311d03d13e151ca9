"""Cursors kept per call site on the store's connection: a statement reuses its site's cursor.

psycopg's `conn.execute` builds a cursor a statement (its adapters map, its
transformer, the dumpers it looks up): some twenty of the ~80 Python calls
a statement costs the worker. A site whose result is read before the site
runs again (or never read) keeps one cursor instead; the same statement
text on the same cursor keeps its transformer, so its dumpers too. Kept for
one connection: a replaced connection starts over.

Only for sites that read their result before they run again: a cursor
held while its site runs twice would read the second statement's rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


class Cursors:
    """One cursor per call site (any hashable key), on the connection last given."""

    __slots__ = ("_conn", "_kept")

    def __init__(self) -> None:
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._kept: dict[object, psycopg.Cursor[tuple[Any, ...]]] = {}

    def execute(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        site: object,
        sql: Any,
        params: Any = None,
        *,
        prepare: bool | None = None,
    ) -> psycopg.Cursor[tuple[Any, ...]]:
        """`conn.execute(sql, params)` on `site`'s cursor."""
        if conn is not self._conn:
            self._conn = conn
            self._kept = {}
        cursor = self._kept.get(site)
        if cursor is None:
            cursor = self._kept[site] = conn.cursor()
        return cursor.execute(sql, params, prepare=prepare)
