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

_INSERT = re.compile(
    r"^\s*INSERT\s+INTO\s+(\w+)\s*\(([^)]*)\)\s*VALUES\s*", re.IGNORECASE | re.DOTALL
)
_UPDATE = re.compile(r"^\s*UPDATE\s+(\w+)\s+SET\s+", re.IGNORECASE | re.DOTALL)
_SET_END = re.compile(r"\s(WHERE|RETURNING|FROM)\s", re.IGNORECASE)


def _split_top(text: str) -> list[str]:
    """Split at the commas outside parentheses and quotes."""
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
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _tuple_end(text: str, start: int) -> int:
    """The index just past the parenthesised tuple opening at `start`."""
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
            if depth == 0:
                return i + 1
    return len(text)


def encoded_positions(sql: str, mark: str = "?") -> tuple[int, ...]:
    """Which positional parameters of `sql` bind a payload column (INSERT VALUES, UPDATE SET)."""
    found: list[int] = []
    insert = _INSERT.match(sql)
    if insert is not None:
        columns = PAYLOAD_COLUMNS.get(insert.group(1).lower())
        if not columns:
            return ()
        names = [c.strip().lower() for c in insert.group(2).split(",")]
        at = insert.end()
        while at < len(sql) and sql[at] == "(":
            end = _tuple_end(sql, at)
            seen = sql[:at].count(mark)
            for name, expr in zip(
                names, _split_top(sql[at + 1 : end - 1]), strict=False
            ):
                if expr.strip() == mark and name in columns:
                    found.append(seen)
                seen += expr.count(mark)
            at = end
            while at < len(sql) and sql[at] in " ,\n":
                at += 1
        return tuple(found)
    update = _UPDATE.match(sql)
    if update is not None:
        columns = PAYLOAD_COLUMNS.get(update.group(1).lower())
        if not columns:
            return ()
        rest = sql[update.end() :]
        stop = _SET_END.search(rest)
        seen = sql[: update.end()].count(mark)
        for assignment in _split_top(rest if stop is None else rest[: stop.start()]):
            name, _, expr = assignment.partition("=")
            if expr.strip() == mark and name.strip().lower() in columns:
                found.append(seen)
            seen += assignment.count(mark)
    return tuple(found)


def encode_params(
    codec: PayloadCodec, params: Sequence[Any], positions: tuple[int, ...]
) -> tuple[Any, ...]:
    """`params` with the payload texts at `positions` encoded (None and refusals stay)."""
    out = list(params)
    for i in positions:
        value = out[i]
        if isinstance(value, str) and not value.startswith(REFUSED_PREFIX):
            out[i] = encode_text(codec, value)
    return tuple(out)


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
