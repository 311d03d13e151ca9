"""What the inspector opens: a database file (a Path) or a Postgres database by its URL (a str)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from harvest_engine import PostgresReader, SqliteReader

if TYPE_CHECKING:
    from harvest_engine.codecs import PayloadCodec

_codec: list[PayloadCodec] = []
"""The payload codec `--codec` named at launch (empty: the files are plain)."""


def use_codec(codec: PayloadCodec | None) -> None:
    """Open every database of this process with `codec` (``harvest-gui --codec``)."""
    _codec[:] = [] if codec is None else [codec]


def codec() -> PayloadCodec | None:
    """The launch's payload codec, for every open of a database."""
    return _codec[0] if _codec else None


Target = Path | str
"""A harvest database file, or a ``postgresql://`` URL kept as text."""


def is_dsn(text: str) -> bool:
    """Whether `text` names a Postgres database (``postgresql://`` or ``postgres://``)."""
    return text.startswith(("postgresql://", "postgres://"))


def as_target(text: str | Path) -> Target:
    """A command-line argument or a recent entry as a Path, or a Postgres URL as text."""
    if isinstance(text, str) and is_dsn(text):
        return text
    return Path(text)


def display_name(target: Target) -> str:
    """How the window names it: the file's name, or the URL with its password hidden."""
    if isinstance(target, Path):
        return target.name
    parts = urlsplit(target)
    if parts.password is None:
        return target
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def open_reader(target: Target) -> SqliteReader | PostgresReader:
    """A read-only reader on the file or the Postgres database."""
    if isinstance(target, str):
        return PostgresReader.connect(target, codec=codec())
    return SqliteReader.open(target, codec=codec())
