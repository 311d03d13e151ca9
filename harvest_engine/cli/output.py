r"""What the `harvest` commands print: escaped text, tables, JSON, one error line and its exit code.

Every command prints through these helpers, so a name or payload holding a
control character (an ESC sequence, a newline that would forge a table row)
is shown escaped (``\x1b``, ``\n``) and never reaches the terminal raw.
``--json`` output is ASCII-only JSON: a string's control and non-ASCII
characters are ``\u`` escapes, so a pipe reads exactly the stored text.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from harvest_engine import payloads
from harvest_engine.errors import (
    CodecRequired,
    DatabaseCorrupt,
    DatabaseLocked,
    ExecutionNotFound,
    HarvestError,
    NotAHarvestDatabase,
    SchemaTooNew,
    StorageError,
    WorkflowIdNotFound,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

EXIT_FAILED = 1
"""Any other refusal: bad input, a failed replay, a run in the wrong state."""
EXIT_USAGE = 2
"""Click's own: a missing argument or an unknown option."""
EXIT_NOT_FOUND = 3
"""No such run (`ExecutionNotFound`, `WorkflowIdNotFound`)."""
EXIT_LOCKED = 4
"""Another writer holds the file (`DatabaseLocked`)."""
EXIT_NOT_HARVEST = 5
"""The file is not a harvest database this version can read (`NotAHarvestDatabase`, `SchemaTooNew`)."""
EXIT_CORRUPT = 6
"""The file or a run in it is damaged (`DatabaseCorrupt`)."""
EXIT_STORAGE = 7
"""The file could not be read or written: disk full, I/O error, permission (`StorageError`)."""
EXIT_CODEC = 9
"""The file's payloads are encoded and its codec was not given, or not right (`CodecRequired`)."""

_EXIT_CODES: tuple[tuple[tuple[type[BaseException], ...], int], ...] = (
    ((StorageError, OSError), EXIT_STORAGE),
    ((DatabaseCorrupt,), EXIT_CORRUPT),
    ((DatabaseLocked,), EXIT_LOCKED),
    ((CodecRequired,), EXIT_CODEC),
    ((NotAHarvestDatabase, SchemaTooNew), EXIT_NOT_HARVEST),
    ((ExecutionNotFound, WorkflowIdNotFound), EXIT_NOT_FOUND),
)

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0 controls, DEL, C1 controls, and the line/paragraph separators and bidi
# controls a terminal or a pager would act on instead of showing.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NON_ASCII = re.compile("[^\x00-\x7e]")


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(value: object) -> str:
    r"""`value` as text safe to print: control characters shown as escapes (``\x1b``, ``\n``)."""
    text = value if isinstance(value, str) else str(value)
    return _UNSAFE.sub(_escape_char, text)


def _ascii_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def ascii_json(text: str) -> str:
    r"""JSON text with every non-ASCII character (only ever inside strings) as a ``\u`` escape."""
    return _NON_ASCII.sub(_ascii_char, text)


def emit_json(value: Any) -> None:
    """Print one JSON document (``--json``), ASCII-only."""
    click.echo(ascii_json(payloads.dumps(value)))


def emit_json_text(text: str) -> None:
    """Print an already-encoded JSON document, ASCII-only."""
    click.echo(ascii_json(text))


def line(*parts: object, sep: str = "  ") -> None:
    """Print one line of escaped fields."""
    click.echo(sep.join(escape(p) for p in parts))


def emit_trace(trace: str, *, err: bool = False) -> None:
    """Print a recorded traceback, one escaped line per line, indented under its heading."""
    for text in trace.rstrip("\n").split("\n"):
        click.echo(f"  {escape(text)}", err=err)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest (escaped) cell, for a person to read."""
    cells = [[escape(c) for c in headers], *[[escape(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    return "\n".join(lines)


def emit_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print `table(headers, rows)`."""
    click.echo(table(headers, rows))


def exit_code_for(exc: BaseException) -> int:
    """The exit status the `harvest` command uses for this error."""
    for kinds, code in _EXIT_CODES:
        if isinstance(exc, kinds):
            return code
    return EXIT_FAILED


class HarvestFailure(click.ClickException):
    """An error shown as one escaped line on stderr, with its type's exit status."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        # Click declares exit_code on the class; each failure carries its own.
        self.exit_code = exit_code  # type: ignore[misc]

    def show(self, file: Any = None) -> None:
        """Print ``harvest: <message>`` to stderr, on one line."""
        click.echo(f"harvest: {escape(self.format_message())}", err=True)


def locked_advice(exc: DatabaseLocked) -> str:
    """A held file's message with what a shell user can do (the engine's names Python calls)."""
    held_by = getattr(exc, "held_by", "")
    path = getattr(exc, "path", "the file")
    return (
        f"{path} is held by another writer{held_by}: stop that process and "
        "run this again; beside it, the reads (harvest runs, show, history, tail, "
        "...) work, and harvest start, signal, cancel, ... talk to it if it serves "
        "the file"
    )


@contextmanager
def failures() -> Iterator[None]:
    """Turn engine, value and OS errors into one line and the error type's exit status."""
    try:
        yield
    except (HarvestFailure, BrokenPipeError):
        raise  # a closed stdout is not the file's failure: the group ends quietly
    except (HarvestError, ValueError, OSError, OverflowError, RecursionError) as exc:
        text = str(exc)
        if isinstance(exc, OSError) and exc.filename is not None:
            text = f"{exc.filename}: {exc.strerror or text}"
        if isinstance(exc, DatabaseLocked):
            text = locked_advice(exc)
        if isinstance(exc, CodecRequired):
            text += "\nhint: pass --codec MODULE:ATTR (or set HARVEST_CODEC) naming its codec"
        raise HarvestFailure(text, exit_code_for(exc)) from exc
