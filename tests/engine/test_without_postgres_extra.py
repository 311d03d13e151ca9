"""psycopg is the optional `postgres` extra: without it the SQLite engine, CLI and GUI still work."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# Run in a fresh interpreter where any import of psycopg fails, as on a
# machine where `pip install harvest` left the extra out.
WITHOUT_PSYCOPG = textwrap.dedent(
    """
    import asyncio, sys

    class NoPsycopg:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("psycopg", "psycopg_binary", "psycopg_c"):
                raise ImportError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoPsycopg())

    import harvest_engine.cli, harvest_gui.__main__
    from harvest_engine import (
        HarvestClient, PostgresReader, PostgresRuntime, RunState, SqliteRuntime,
        Unsupported, WorkflowContext, workflow,
    )

    @workflow
    async def greet(ctx: WorkflowContext, name: str) -> str:
        return f"hello {name}"

    async def main() -> None:
        with SqliteRuntime.open(sys.argv[1]) as rt:
            rt.register_workflow(greet)
            state = await rt.run_until_blocked(rt.start_workflow("greet", "ada"))
            assert state == RunState.Completed(output="hello ada"), state

    asyncio.run(main())
    for connect in (PostgresRuntime.connect, PostgresReader.connect, HarvestClient.connect):
        try:
            connect("postgresql:///nowhere")
        except Unsupported as exc:
            print("refused:", exc)
    """
)


def test_the_sqlite_engine_cli_and_gui_import_and_run_without_psycopg(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG, str(tmp_path / "runs.db")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    refusals = done.stdout.splitlines()
    assert len(refusals) == 3
    assert all("pip install 'harvest[postgres]'" in line for line in refusals)


def test_importing_the_engine_does_not_load_psycopg() -> None:
    # A CLI call or a client process on a SQLite file pays no Postgres import.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, harvest_engine, harvest_engine.cli; "
            "print(sorted(m for m in sys.modules if m.startswith('psycopg')))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"
