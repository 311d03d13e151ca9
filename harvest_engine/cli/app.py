"""The `harvest` command group and what every command shares (the file argument, `--json`, a reader)."""

from __future__ import annotations

import functools
import os
import shlex
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harvest_engine import __version__
from harvest_engine.cli.output import EXIT_NOT_FOUND, HarvestFailure, failures
from harvest_engine.codecs import PayloadCodec, load_codec
from harvest_engine.errors import HarvestError
from harvest_engine.filters import ExecutionFilter
from harvest_engine.run_lookup import run_of, workflow_id_exists
from harvest_engine.store.postgres.reader import PostgresReader
from harvest_engine.store.sqlite.reader import SqliteReader

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

F = TypeVar("F", bound="Callable[..., Any]")

Target = Path | str
"""What FILE names: a database file, or a Postgres database by its URL (a str)."""


def is_dsn(text: str) -> bool:
    """Whether FILE names a Postgres database (``postgresql://`` or ``postgres://``)."""
    return text.startswith(("postgresql://", "postgres://"))


def target(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> Target | None:
    """A click callback: FILE as a Path, or a Postgres URL kept as text."""
    del ctx, param
    if value is None:
        return None
    return value if is_dsn(value) else Path(value)


# The engine checks the path itself (a folder, no permission, a symlink loop),
# so each case ends in its typed error and exit status, not a usage message.
# A postgresql:// URL opens that database the same way.
_FILE = click.argument("file", callback=target)

_CODEC_KEY = "harvest.codec"


def _load_codec(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """A click callback: load ``--codec module:attr`` once, for every open of the command."""
    if value:
        try:
            ctx.meta[_CODEC_KEY] = load_codec(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param) from exc


CODEC = click.option(
    "--codec",
    envvar="HARVEST_CODEC",
    expose_value=False,
    callback=_load_codec,
    metavar="MODULE:ATTR",
    help="The payload codec the file was written with (README 'Payload codecs').",
)


def codec() -> PayloadCodec | None:
    """The codec ``--codec`` named for this command (None: the file is plain)."""
    ctx = click.get_current_context(silent=True)
    found = None if ctx is None else ctx.meta.get(_CODEC_KEY)
    return found if isinstance(found, PayloadCodec) else None


def FILE(fn: F) -> F:  # noqa: N802 - a decorator named like the argument it adds
    """FILE and the ``--codec`` that reads it: every command that opens the file takes both."""
    return _FILE(CODEC(fn))


JSON = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON instead of text."
)


def _end_on_closed_stdout() -> None:
    """End the way `yes | head -1` does once the reader of stdout is gone: quietly.

    Stdout goes to /dev/null first, so the interpreter's last flush finds
    nothing to complain about; then the process ends by SIGPIPE, the status a
    shell pipeline expects of a writer whose reader left (exit 0 where there
    is no SIGPIPE).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    sys.exit(0)


WORKFLOW_ID = "--workflow-id"
_BY_WORKFLOW_ID = "harvest.by_workflow_id"


class RunCommand(click.Command):
    """A command whose EXEC_ID argument (`EXEC`) may be given as ``--workflow-id ID`` instead.

    Click matches positional arguments left to right, so with
    ``--workflow-id`` on the line the EXEC_ID argument is left out of the
    parse: ``harvest signal FILE --workflow-id K1 NAME`` reads NAME as NAME.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Note whether the line names the run by its workflow id, then parse."""
        ctx.meta[_BY_WORKFLOW_ID] = any(
            a == WORKFLOW_ID or a.startswith(WORKFLOW_ID + "=") for a in args
        )
        return super().parse_args(ctx, args)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """The parameters, without EXEC_ID when `--workflow-id` stands for it."""
        params = super().get_params(ctx)
        if ctx.meta.get(_BY_WORKFLOW_ID):
            return [
                p
                for p in params
                if not (isinstance(p, click.Argument) and p.name == "exec_id")
            ]
        return params


def EXEC(fn: Callable[..., Any]) -> Callable[..., Any]:  # noqa: N802 - spelt like FILE and JSON
    """The run a command takes: EXEC_ID, or ``--workflow-id ID`` (its RUNNING run, else its newest).

    Every command taking a run uses it (after FILE), so each spells it the
    same way and resolves it once (`run_target`); the command gets the
    exec id.
    """

    @functools.wraps(fn)
    def resolved(
        *args: Any,
        exec_id: str | None = None,
        workflow_id: str | None = None,
        **kw: Any,
    ) -> Any:
        kw["exec_id"] = run_target(kw["file"], exec_id, workflow_id)
        return fn(*args, **kw)

    option = click.option(
        WORKFLOW_ID,
        "workflow_id",
        default=None,
        metavar="ID",
        help="Name the run by its workflow id instead of EXEC_ID: the RUNNING run "
        "of that id, else the newest.",
    )
    return click.argument("exec_id", required=False)(option(resolved))


def run_target(file: Target, exec_id: str | None, workflow_id: str | None) -> str:
    """The exec id a command line names (see `EXEC`).

    An EXEC_ID that no run has, but that is some run's workflow id, is
    refused with the `--workflow-id` spelling to use.
    """
    if workflow_id is None and exec_id is None:
        raise click.UsageError(f"give EXEC_ID, or {WORKFLOW_ID} ID")
    with reading(file) as reader:
        if workflow_id is not None:
            return run_of(reader, None, workflow_id)
        assert exec_id is not None  # noqa: S101 - checked above
        text = exec_id.strip()
        if text and not _has_run(reader, text) and workflow_id_exists(reader, text):
            raise HarvestFailure(
                f"no execution with id {text!r}, but it is a workflow id: "
                f"use {WORKFLOW_ID} {shlex.quote(text)}",
                EXIT_NOT_FOUND,
            )
        return exec_id


def _has_run(reader: SqliteReader | PostgresReader, exec_id: str) -> bool:
    try:
        flt = ExecutionFilter().exec_id(exec_id).limit(1)
    except HarvestError:  # no run could have it (InvalidFilter)
        return False
    return bool(reader.list_executions(flt).executions)


class HarvestGroup(click.Group):
    """The command group: a closed stdout ends any command quietly, not as a failure."""

    command_class = RunCommand

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the command line; `--help` and `--version` print here."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            _end_on_closed_stdout()
            raise  # not reached: the process has ended

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a reader that closed the pipe ends the process quietly."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _end_on_closed_stdout()
            raise  # not reached: the process has ended


@click.group(cls=HarvestGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    8 no serving process answered in time (the command stays queued),
    9 the file's payloads are encoded: give its codec (--codec MODULE:ATTR).
    """


@contextmanager
def reading(path: Target) -> Iterator[SqliteReader | PostgresReader]:
    """A reader on `path` (a file, or a Postgres URL), with errors as one-line failures."""
    with failures():
        reader = (
            PostgresReader.connect(path, codec=codec())
            if isinstance(path, str)
            else SqliteReader.open(path, codec=codec())
        )
        with reader:
            yield reader
