"""The payload columns a codec encodes, per table, and how a statement's parameters reach them.

ONE list (PAYLOAD_COLUMNS): a table that stores payload text names its
columns here and every write to them is encoded, every read decoded, by the
connection (store/sqlite/codec_connection.py). Left plain on purpose:
search_attributes (queried by value), the ids, names and states the SQL
filters on, retry policies and schedule specs (no user data), and a refused
command's reply (the SQL recognises it by its first bytes; it names the
refusal, not a payload).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine.codecs import MARK, CodecFailed, decode_text, encode_text
from harvest_engine.errors import CodecRequired
from harvest_engine.store.sql.commands import REFUSED_PREFIX

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.store.sql.executes import Executes

PAYLOAD_COLUMNS: dict[str, frozenset[str]] = {
    "harvest_executions": frozenset(
        {"input", "output", "error", "memo", "summary", "details", "current_details"}
    ),
    "harvest_events": frozenset({"attrs"}),
    "harvest_tasks": frozenset({"input", "heartbeat", "last_error"}),
    "harvest_signals": frozenset({"payload"}),
    "harvest_activity_attempts": frozenset({"error"}),
    "harvest_schedules": frozenset({"input"}),
    "harvest_commands": frozenset({"args", "reply"}),
    "harvest_workflow_logs": frozenset({"message"}),
    "harvest_run_events": frozenset({"value"}),
    "harvest_streams": frozenset({"value"}),
    "harvest_held_starts": frozenset({"input", "memo"}),
    "harvest_held_inputs": frozenset({"input"}),
}
"""Table -> its columns holding payload text (a new table adds its line here)."""

PAYLOAD_NAMES = frozenset().union(*PAYLOAD_COLUMNS.values())
"""Every payload column's name: a read decodes a marked value only under one of these."""

CODEC_KEY = "codec_check"
"""harvest_meta key: a known text encoded with the file's codec (present = codec required)."""

_CHECK_TEXT = '"harvest payload codec"'

_INSERT = re.compile(r"INSERT\s+INTO\s+(\w+)\s*\(([^)]*)\)\s*", re.IGNORECASE)
_UPDATE = re.compile(r"UPDATE\s+(\w+)\s+SET\s+", re.IGNORECASE)
_VALUES = re.compile(r"VALUES\s*", re.IGNORECASE)
_UNNEST = re.compile(
    r"unnest\((.*?)\)\s+AS\s+\w+\s*\(([^)]*)\)", re.IGNORECASE | re.DOTALL
)
_NAMED = re.compile(r"^%\((\w+)\)s(::text\[\])?$")
_CLAUSE_END = re.compile(r"(WHERE|RETURNING|FROM)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Targets:
    """Which parameters of one statement bind payload text.

    `positions`: positional marks; `names`: named ones (``%(name)s``);
    `lists`: named arrays whose every element is a payload (Postgres's unnest).
    """

    positions: tuple[int, ...] = ()
    names: frozenset[str] = frozenset()
    lists: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.positions or self.names or self.lists)


def _split_top(text: str) -> list[tuple[int, str]]:
    """The parts of `text` between commas outside parentheses and quotes, with their offsets."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append((start, text[start:i]))
            start = i + 1
    parts.append((start, text[start:]))
    return parts


def _group_end(text: str, start: int, *, keywords: bool = False) -> int:
    """Where the group at `start` ends (past its closing parenthesis).

    With `keywords`: at the first WHERE / RETURNING / FROM or unmatched ``)``
    outside parentheses and quotes (the end of an UPDATE's SET list).
    """
    depth, quoted = 0, False
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "'":
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and not keywords:
                return i + 1
            if depth < 0:
                return i
        elif (
            keywords
            and depth == 0
            and _CLAUSE_END.match(text, i)
            and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))
        ):
            return i
    return len(text)


class _Found:
    def __init__(self, sql: str, mark: str) -> None:
        self.sql, self.mark = sql, mark
        self.positions: list[int] = []
        self.names: set[str] = set()
        self.lists: set[str] = set()

    def bind(self, at: int, expr: str) -> None:
        """`expr` (at offset `at` of the statement) is what a payload column gets."""
        text = expr.strip()
        if text == self.mark:
            self.positions.append(self.sql[:at].count(self.mark))
        elif (named := _NAMED.match(text)) is not None:
            (self.lists if named.group(2) else self.names).add(named.group(1))


def encoded_targets(sql: str, mark: str = "?") -> Targets:
    """The parameters of `sql` that bind a payload column (INSERT ... VALUES / unnest, UPDATE SET)."""
    found = _Found(sql, mark)
    for insert in _INSERT.finditer(sql):
        columns = PAYLOAD_COLUMNS.get(insert.group(1).lower())
        if not columns:
            continue
        names = [c.strip().lower() for c in insert.group(2).split(",")]
        values = _VALUES.match(sql, insert.end())
        if values is None:
            unnest = _UNNEST.search(sql, insert.end())
            if unnest is not None:
                alias = [c.strip().lower() for c in unnest.group(2).split(",")]
                for name, (_, arg) in zip(
                    alias, _split_top(unnest.group(1)), strict=False
                ):
                    if name in columns:
                        found.bind(0, arg)
            continue
        at = values.end()
        while at < len(sql) and sql[at] == "(":
            end = _group_end(sql, at)
            for name, (offset, expr) in zip(
                names, _split_top(sql[at + 1 : end - 1]), strict=False
            ):
                if name in columns:
                    found.bind(at + 1 + offset, expr)
            at = end
            while at < len(sql) and sql[at] in " ,\n":
                at += 1
    for update in _UPDATE.finditer(sql):
        columns = PAYLOAD_COLUMNS.get(update.group(1).lower())
        if not columns:
            continue
        start = update.end()
        end = _group_end(sql, start, keywords=True)
        for offset, assignment in _split_top(sql[start:end]):
            name, sign, expr = assignment.partition("=")
            if sign and name.strip().lower() in columns:
                found.bind(start + offset + len(name) + 1, expr)
    return Targets(
        tuple(found.positions), frozenset(found.names), frozenset(found.lists)
    )


_TARGETS: dict[tuple[str, str], Targets] = {}
"""(statement text, mark) -> its payload parameters: the statements are few and fixed."""

_TARGETS_KEPT = 4096
"""Past this many statements (an IN list of every length) the cache starts over."""


def targets_of(sql: object, mark: str = "?") -> Targets:
    """`encoded_targets`, worked out once per statement text (composed SQL binds no payload)."""
    if not isinstance(sql, str):
        return Targets()
    found = _TARGETS.get((sql, mark))
    if found is None:
        if len(_TARGETS) >= _TARGETS_KEPT:
            _TARGETS.clear()
        found = _TARGETS[sql, mark] = encoded_targets(sql, mark)
    return found


def encode_params(codec: PayloadCodec, params: Any, targets: Targets) -> Any:
    """`params` (a sequence or a mapping) with the payload texts `targets` names encoded."""
    if isinstance(params, dict):
        out = dict(params)
        for name in targets.names:
            out[name] = _encoded(codec, out.get(name))
        for name in targets.lists:
            out[name] = [_encoded(codec, v) for v in out.get(name) or ()]
        return out
    if not isinstance(params, (tuple, list)):
        return params
    seq = list(params)
    for i in targets.positions:
        seq[i] = _encoded(codec, seq[i])
    return tuple(seq)


def _encoded(codec: PayloadCodec, value: Any) -> Any:
    """A payload text encoded (None and a refused command's reply stay as they are)."""
    if isinstance(value, str) and not value.startswith(REFUSED_PREFIX):
        return encode_text(codec, value)
    return value


def decode_row(
    codec: PayloadCodec, names: Sequence[str], row: tuple[Any, ...]
) -> tuple[Any, ...]:
    """`row` with each marked value under a payload column's name decoded."""
    for value in row:
        if isinstance(value, str) and value.startswith(MARK):
            break
    else:
        return row
    return tuple(
        decode_text(codec, value)
        if isinstance(value, str) and value.startswith(MARK) and name in PAYLOAD_NAMES
        else value
        for name, value in zip(names, row, strict=False)
    )


def settle_codec(
    conn: Executes,
    path: str,
    codec: PayloadCodec | None,
    *,
    write: bool,
    mark: str = "?",
) -> None:
    """Refuse a codec-encoded file opened without its codec; record the codec in a new one.

    Raises:
        CodecRequired: the file was written with a codec and `codec` is None,
            or `codec` cannot read the file's check value (a wrong key).
    """
    try:  # a codec connection decodes the value as it reads it: a wrong key fails here
        row = conn.execute(
            f"SELECT value FROM harvest_meta WHERE key = {mark}", (CODEC_KEY,)
        ).fetchone()
    except CodecFailed:
        row = ("",)
    if row is None:
        if codec is not None and write:
            conn.execute(
                f"INSERT INTO harvest_meta (key, value) VALUES ({mark}, {mark})",
                (CODEC_KEY, encode_text(codec, _CHECK_TEXT)),
            )
        return
    if codec is None:
        raise CodecRequired(
            path=path,
            reason="its payloads are encoded: open it with the codec it was written with "
            "(codec=..., or --codec module:attr)",
        )
    try:
        ok = decode_text(codec, str(row[0])) == _CHECK_TEXT
    except CodecFailed:
        ok = False
    if not ok:
        raise CodecRequired(
            path=path,
            reason=f"the codec given ({type(codec).__name__}) cannot read its payloads "
            "(a wrong key, or another codec)",
        )
