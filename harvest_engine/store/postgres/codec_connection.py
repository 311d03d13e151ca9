"""A psycopg connection that encodes payload columns as it writes and decodes them as it reads.

Only a store connected with a codec uses it; without one the plain
psycopg connection runs. Which parameters and columns are payloads:
store/sql/payload_columns.py (the same list as SQLite's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from harvest_engine.store.sql.payload_columns import (
    decode_row,
    encode_params,
    targets_of,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from harvest_engine.codecs import PayloadCodec


class CodecPgCursor(psycopg.Cursor[Any]):
    """A cursor that encodes the payload parameters of the statements it runs."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> CodecPgCursor:  # noqa: D102
        targets = targets_of(query, "%s")
        if targets and params is not None:
            params = encode_params(_codec_of(self.connection), params, targets)
        super().execute(query, params, **kwargs)
        return self

    def executemany(  # noqa: D102 - psycopg's
        self, query: Any, params_seq: Iterable[Any], **kwargs: Any
    ) -> None:
        targets = targets_of(query, "%s")
        if targets:
            codec = _codec_of(self.connection)
            params_seq = [encode_params(codec, p, targets) for p in params_seq]
        super().executemany(query, params_seq, **kwargs)


class CodecPgConnection(psycopg.Connection[Any]):
    """A psycopg connection carrying the codec its cursors and rows use."""

    codec: PayloadCodec

    def use_codec(self, codec: PayloadCodec) -> None:
        """Encode and decode with `codec` from now on."""
        self.codec = codec
        self.cursor_factory = CodecPgCursor
        self.row_factory = _decoding_rows(codec)


def _codec_of(conn: object) -> PayloadCodec:
    return conn.codec if isinstance(conn, CodecPgConnection) else _NO_CODEC


class _Identity:
    def encode(self, data: bytes) -> bytes:
        return data

    def decode(self, data: bytes) -> bytes:
        return data


_NO_CODEC = _Identity()


def _decoding_rows(
    codec: PayloadCodec,
) -> Callable[[Any], Callable[[Sequence[Any]], tuple[Any, ...]]]:
    """A psycopg row factory: tuples, each marked payload value decoded."""

    def factory(cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        names = [d.name for d in cursor.description or ()]

        def make(values: Sequence[Any]) -> tuple[Any, ...]:
            return decode_row(codec, names, tuple(values))

        return make

    return factory


def open_codec_connection(
    conninfo: str, codec: PayloadCodec, **kwargs: Any
) -> psycopg.Connection[tuple[Any, ...]]:
    """`psycopg.connect` for a codec: a CodecPgConnection set to use it."""
    conn = CodecPgConnection.connect(conninfo, **kwargs)
    conn.use_codec(codec)
    return conn
