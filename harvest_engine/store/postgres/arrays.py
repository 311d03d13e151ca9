"""Array parameters the hot statements bind, dumped in one call instead of psycopg's per-list upgrade.

psycopg dumps a plain `list` by inspecting it first (its element type, the
dumper for that, an upgraded dumper cached by both): some thirty Python
calls per list, and a held append (`deferred`) binds four lists. A list
built as `Ints` or `Texts` is known to hold ints or str (no None): its
dumper writes the array literal at once. The statement casts the parameter
(``%s::bigint[]``) or compares it with a column (``= ANY(%s)``), so the
literal goes untyped and the server reads it as that type.

A codec connection (`codec_connection`) rebuilds the payload lists as plain
lists it encodes: those take psycopg's own path, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.adapt import Dumper

if TYPE_CHECKING:
    from collections.abc import Callable

    from psycopg.abc import AdaptContext


class Ints(list[int]):
    """A list of ints bound as one array parameter."""


class MaybeInts(list[int | None]):
    """A list of ints or None bound as one array parameter."""


class Texts(list[str]):
    """A list of str bound as one array parameter (no None)."""


class MaybeTexts(list[str | None]):
    """A list of str or None bound as one array parameter."""


class MaybeFloats(list[float | None]):
    """A list of floats (or ints) or None bound as one array parameter."""


class _IntsDumper(Dumper):
    oid = 0  # untyped: the statement's cast or column says which integer

    def dump(self, obj: Any) -> bytes:
        return ("{" + ",".join(map(str, map(int, obj))) + "}").encode()


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _texts(items: list[str]) -> str:
    """The array literal of `items`, escaped in one pass over them all.

    Joined by NUL (no Postgres text holds one): the separators are the only
    NULs unless an item has its own, and then each is quoted alone (the
    server refuses that item, as it would have anyway).
    """
    if not items:
        return "{}"
    joined = "\x00".join(items)
    if joined.count("\x00") != len(items) - 1:
        return "{" + ",".join(map(_quoted, items)) + "}"
    if "\\" in joined:
        joined = joined.replace("\\", "\\\\")
    if '"' in joined:
        joined = joined.replace('"', '\\"')
    return '{"' + joined.replace("\x00", '","') + '"}'


class _TextsDumper(Dumper):
    oid = 0

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        conn = self.connection
        # The connection's client encoding, as psycopg's own str dumper does.
        self._encoding = "utf-8" if conn is None else conn.info.encoding

    def dump(self, obj: Any) -> bytes:
        return _texts(obj).encode(self._encoding)


class _MaybeTextsDumper(_TextsDumper):
    def dump(self, obj: Any) -> bytes:
        if None not in obj:
            return _texts(obj).encode(self._encoding)
        items = ["NULL" if v is None else _quoted(v) for v in obj]
        return ("{" + ",".join(items) + "}").encode(self._encoding)


def _numbers(literal: Callable[[Any], str]) -> type[Dumper]:
    """A dumper of a list of numbers or None, each written by `literal`."""

    class _NumbersDumper(Dumper):
        oid = 0

        def dump(self, obj: Any) -> bytes:
            items = ["NULL" if v is None else literal(v) for v in obj]
            return ("{" + ",".join(items) + "}").encode()

    return _NumbersDumper


psycopg.adapters.register_dumper(Ints, _IntsDumper)
psycopg.adapters.register_dumper(Texts, _TextsDumper)
psycopg.adapters.register_dumper(MaybeInts, _numbers(lambda v: str(int(v))))
psycopg.adapters.register_dumper(MaybeTexts, _MaybeTextsDumper)
psycopg.adapters.register_dumper(MaybeFloats, _numbers(lambda v: repr(float(v))))
