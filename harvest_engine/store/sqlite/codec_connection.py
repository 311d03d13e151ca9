"""A sqlite3 connection that encodes payload columns as it writes and decodes them as it reads.

Only a store opened with a codec uses it; without one the plain
sqlite3.Connection runs, so a file without a codec costs nothing more.
Which parameters and columns are payloads: store/sql/payload_columns.py.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from harvest_engine.store.sql.payload_columns import (
    decode_row,
    encode_params,
    targets_of,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvest_engine.codecs import PayloadCodec


class CodecCursor(sqlite3.Cursor):
    """A cursor that encodes the payload parameters of the statements it runs."""

    codec: PayloadCodec

    def use_codec(self, codec: PayloadCodec) -> CodecCursor:
        """Encode with `codec` (the connection's)."""
        self.codec = codec
        return self

    def execute(self, sql: str, parameters: Any = (), /) -> CodecCursor:
        """Run `sql`, its payload parameters encoded."""
        targets = targets_of(sql)
        if targets:
            parameters = encode_params(self.codec, parameters, targets)
        super().execute(sql, parameters)
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> CodecCursor:
        """Run `sql` once per parameter row, its payload parameters encoded."""
        targets = targets_of(sql)
        if targets:
            seq_of_parameters = [
                encode_params(self.codec, p, targets) for p in seq_of_parameters
            ]
        super().executemany(sql, seq_of_parameters)
        return self


class CodecConnection(sqlite3.Connection):
    """sqlite3.Connection whose statements go through CodecCursor and whose rows are decoded."""

    codec: PayloadCodec

    def use_codec(self, codec: PayloadCodec) -> None:
        """Encode and decode with `codec` from now on."""
        self.codec = codec

        def decoded(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> tuple[Any, ...]:
            names = [d[0] for d in cursor.description]
            return decode_row(codec, names, row)

        self.row_factory = decoded

    def cursor(self, factory: Any = None) -> Any:  # noqa: D102 - sqlite3's
        cursor = super().cursor(factory or CodecCursor)
        return (
            cursor.use_codec(self.codec) if isinstance(cursor, CodecCursor) else cursor
        )

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # noqa: D102
        return self.cursor().execute(sql, parameters)  # type: ignore[no-any-return]

    def executemany(  # noqa: D102 - sqlite3's
        self, sql: str, parameters: Iterable[Any], /
    ) -> sqlite3.Cursor:
        return self.cursor().executemany(sql, parameters)  # type: ignore[no-any-return]
