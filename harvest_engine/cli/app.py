"""The `harvest` command group and what every command shares (the file argument, `--json`, a reader)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harvest_engine import __version__
from harvest_engine.cli.output import failures
from harvest_engine.store.reader import SqliteReader

if TYPE_CHECKING:
    from collections.abc import Iterator

# The engine checks the path itself (a folder, no permission, a symlink loop),
# so each case ends in its typed error and exit status, not a usage message.
FILE = click.argument("file", type=click.Path(readable=False, path_type=Path))
EXEC = click.argument("exec_id")
JSON = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON instead of text."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, message="harvest %(version)s")
def main() -> None:
    """Inspect and operate a harvest database file.

    Reads go through a read-only connection that takes no lock, so they work
    beside a live writer. Only `purge` opens the file as the writer. `start`,
    `signal`, `query`, `update`, `cancel`, `terminate` and `result` talk to
    the process that serves the file (`await rt.serve()`) as a client.

    Exit status: 0 done, 1 refused (bad input, failed replay), 2 usage,
    3 no such run, 4 locked by a writer, 5 not a harvest file (or too new),
    6 damaged file or run, 7 storage failed (disk full, I/O, permission),
    8 no serving process answered in time (the command stays queued).
    """


@contextmanager
def reading(path: Path) -> Iterator[SqliteReader]:
    """A reader on `path`, with errors as one-line failures."""
    with failures(), SqliteReader.open(path) as reader:
        yield reader
