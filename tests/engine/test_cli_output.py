"""What `harvest` prints: every field escaped, `--json` everywhere and ASCII-only, exit codes by error type."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import cli_flows
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvest_engine import (
    DatabaseCorrupt,
    DatabaseLocked,
    ExecutionNotFound,
    SqliteRuntime,
    StorageError,
)
from harvest_engine.cli.output import (
    ascii_json,
    escape,
    exit_code_for,
    table,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FORGED = "x\nzzz  COMPLETED\x1b[2J\x07\x9b\u202e"


def harvest(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)])
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


@given(st.text())
def test_escaped_text_holds_no_control_character_and_keeps_printable_text(
    text: str,
) -> None:
    shown = escape(text)
    assert not any(
        ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029\u202e"
        for c in shown
    )
    if all(c.isprintable() and not 0x202A <= ord(c) <= 0x202E for c in text):
        assert shown == text


def test_escape_names_the_usual_controls() -> None:
    assert escape("a\nb\tc\r\x1b[31m\x00") == "a\\nb\\tc\\r\\x1b[31m\\x00"
    assert escape("\u202e") == "\\u202e"
    assert escape(7) == "7"


@given(
    st.recursive(
        st.text(st.characters(exclude_categories=["Cs"]))
        | st.integers(-(2**63), 2**63 - 1),
        lambda v: st.lists(v, max_size=3),
    )
)
def test_ascii_json_is_ascii_and_decodes_to_the_same_value(value: Any) -> None:
    from harvest_engine import payloads

    shown = ascii_json(payloads.dumps(value))
    assert shown.isascii()
    assert json.loads(shown) == value


def test_a_table_cell_with_a_newline_stays_on_its_row() -> None:
    text = table(("NAME", "STATE"), [(FORGED, "RUNNING")])
    assert len(text.splitlines()) == 2
    assert "\x1b" not in text


def test_each_error_type_has_its_exit_status() -> None:
    assert exit_code_for(ExecutionNotFound(exec_id="e")) == 3
    assert exit_code_for(DatabaseLocked(path="p", lock_path="p.lock")) == 4
    assert exit_code_for(DatabaseCorrupt(path="p", reason="r")) == 6
    assert exit_code_for(StorageError(path="p", reason="disk full")) == 7
    assert exit_code_for(PermissionError(13, "denied")) == 7
    assert exit_code_for(ValueError("bad")) == 1


@pytest.fixture(scope="module")
def forged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A file whose one run has a workflow id that would forge a COMPLETED row."""
    path = tmp_path_factory.mktemp("forged") / "f.db"
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(cli_flows.approval)
        run = rt.start_workflow_with_id("approval", FORGED, FORGED)
        asyncio.run(rt.run_until_blocked(run))
    return {"path": path, "run": str(run)}


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "{path}"),
        ("show", "{path}", "{run}"),
        ("history", "{path}", "{run}"),
        ("tail", "{path}", "--max-seconds", "0.2", "--interval", "50ms"),
    ],
)
def test_no_command_prints_a_control_character_from_a_stored_name(
    forged: dict[str, Any], args: tuple[str, ...]
) -> None:
    done = harvest(*(a.format(**forged) for a in args))
    assert done.returncode == 0, done.stderr
    assert not any(ord(c) < 0x20 and c != "\n" for c in done.stdout)
    assert "\x9b" not in done.stdout
    assert "\u202e" not in done.stdout
    if args[0] in ("runs", "show"):  # the commands that print the workflow id
        assert "\\x1b[2J" in done.stdout
    assert not any(ln.startswith("zzz") for ln in done.stdout.splitlines())


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "{path}"),
        ("show", "{path}", "{run}"),
        ("history", "{path}", "{run}"),
        ("counts", "{path}"),
        ("schedules", "{path}"),
        ("logs", "{path}", "{run}"),
        ("ledger", "{path}", "{run}"),
        ("purge", "{copy}", "--older-than", "1d"),
        ("replay", "{path}", "{run}", "--module", "cli_flows"),
    ],
)
def test_every_command_prints_ascii_json_with_json(
    forged: dict[str, Any], tmp_path: Path, args: tuple[str, ...]
) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(Path(forged["path"]).read_bytes())
    done = harvest(*(a.format(copy=copy, **forged) for a in args), "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.isascii()
    data = json.loads(done.stdout)
    if args[0] == "runs":
        assert data["executions"][0]["workflow_id"] == FORGED


def test_tail_json_prints_one_object_per_line(forged: dict[str, Any]) -> None:
    done = harvest(
        "tail", forged["path"], "--max-seconds", "0.2", "--interval", "50ms", "--json"
    )
    assert done.returncode == 0, done.stderr
    (first,) = done.stdout.splitlines()
    assert json.loads(first)["exec_id"] == forged["run"]


def test_an_error_message_is_escaped_on_one_line(forged: dict[str, Any]) -> None:
    done = harvest("show", forged["path"], "no\nsuch\x1b")
    assert done.returncode == 3
    assert done.stderr == "harvest: no execution with id no\\nsuch\\x1b\n"
