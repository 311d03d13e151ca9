"""Command line of the inspector: `harvest-gui [--read-only | --client] [PATH | postgresql://URL] [--app MODULE]`."""

from __future__ import annotations

import argparse
import os
import sys

from harvest_engine.codecs import load_codec
from harvest_gui import __version__
from harvest_gui.display import missing_display
from harvest_gui.target import as_target, use_codec

EPILOG = """\
With --client, the window writes nothing but commands: the process that
serves PATH (a file's writer, or a Postgres database's workers) applies them.

PATH may be a postgresql:// URL: the window reads it through PostgresReader
(--read-only), is a client of its serving workers (--client), or serves it
as one more PostgresRuntime worker.

With no PATH, the demo workspace opens: a file in your data folder with the
bundled demo workflows registered and a few runs started.

An --app module either defines register(rt) or lists WORKFLOWS and ACTIVITIES
(optionally QUERIES and UPDATES); its workflows are registered on the writer.
With --read-only, the module's code only replays runs (where a run waits, its
call stack on the Stack tab); nothing is written.
"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Read the three launch forms of GUI.md."""
    parser = argparse.ArgumentParser(
        prog="harvest-gui",
        description="Desktop inspector for harvest database files.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "path",
        nargs="?",
        type=as_target,
        help="the harvest database file, or a postgresql:// URL",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="inspect PATH through SqliteReader: no lock, nothing written, follows a writer live",
    )
    parser.add_argument(
        "--client",
        action="store_true",
        help="act on PATH through the process(es) serving it (HarvestClient): "
        "only command rows are written",
    )
    parser.add_argument(
        "--app",
        metavar="MODULE",
        help="module whose workflows and activities are registered (read-only: used for replays)",
    )
    parser.add_argument(
        "--codec",
        metavar="MODULE:ATTR",
        help="the payload codec the database was written with (README 'Payload codecs')",
    )
    parser.add_argument(
        "--version", action="version", version=f"harvest-gui {__version__}"
    )
    args = parser.parse_args(argv)
    if args.codec:
        try:
            use_codec(load_codec(args.codec))
        except ValueError as exc:
            parser.error(str(exc))
    if args.path is None and (args.read_only or args.app or args.client):
        parser.error("--read-only, --client and --app need a PATH")
    if args.read_only and args.client:
        parser.error("--read-only and --client are two different modes: pick one")
    return args


def app_import_path(path: list[str]) -> None:
    """Put the current folder first on `path` for `--app`, as `python -m` does.

    The installed `harvest-gui` script starts with its own folder there, so
    `harvest-gui shop.db --app shopflows` beside shopflows.py would not find it.
    """
    here = os.getcwd()
    if not any(entry in ("", ".", here) for entry in path):
        path.insert(0, here)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `harvest-gui` and `python -m harvest_gui`."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.app:
        app_import_path(sys.path)
    problem = missing_display(os.environ)
    if problem is not None:
        print(problem, file=sys.stderr, end="")
        return 2
    from harvest_gui.app import run

    return run(args.path, args.read_only, args.app, args.client)


if __name__ == "__main__":
    sys.exit(main())
