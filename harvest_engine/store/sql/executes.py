"""What the shared SQL needs of a connection and a cursor: sqlite3's and psycopg's both fit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence


class Rows(Protocol):
    """What a statement needs of a cursor: its rows, or how many rows it changed."""

    @property
    def rowcount(self) -> int:
        """How many rows the statement changed (-1 for a read)."""
        ...

    def fetchall(self) -> Sequence[Any]:
        """Every row left, as tuples of column values."""
        ...

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """The rows one at a time."""
        ...

    def close(self) -> None:
        """Drop the rows not read."""
        ...


class Executes(Protocol):
    """What a read needs of a connection (sqlite3's and psycopg's both have it)."""

    def execute(self, sql: Any, params: Any = ..., /) -> Rows:
        """Run one statement with its parameters."""
        ...

    def cursor(self) -> Any:
        """A cursor of its own (for executemany)."""
        ...
