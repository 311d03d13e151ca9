"""The `harvest` command through its real entry point (`python -m harvest_engine`)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import cli_flows
import pytest

from harvest_engine import (
    ManualClock,
    Schedule,
    SqliteRuntime,
    WorkflowLogPolicy,
    WorkflowSchedule,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def harvest(
    *args: str | Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)])
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or ROOT,
        timeout=60,
    )


def ok_json(*args: str | Path) -> Any:
    done = harvest(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A closed file with a completed report, a parked approval and a schedule."""
    import asyncio

    path = tmp_path_factory.mktemp("cli") / "ops.db"
    clock = ManualClock()
    rt = SqliteRuntime.open(path, clock=clock)
    rt.register_workflow(cli_flows.report)
    rt.register_workflow(cli_flows.approval)
    rt.register_activity_with_ledger(cli_flows.summarise, cli_flows.summarise_with_cost)
    rt.set_workflow_log_policy(WorkflowLogPolicy())
    done = rt.start_workflow_with_id("report", "weekly", "hello")
    asyncio.run(rt.run_until_blocked(done))
    parked = rt.start_workflow("approval", None)
    asyncio.run(rt.run_until_blocked(parked))
    rt.upsert_schedule(
        WorkflowSchedule("report", Schedule.cron("0 3 * * *"), input="nightly")
    )
    # Log lines written as the runtime's cycle writes them, so this test covers
    # the reader and the CLI whatever the path from ctx.log to the store does.
    with rt.store.write() as txn:
        at = clock.now()
        txn.append_log_lines(
            str(done), [(1, at, "summarising hello"), (2, at, "done")], None
        )
    clock.advance(timedelta(days=60))
    rt.close()
    return {"path": path, "done": str(done), "parked": str(parked)}


def test_runs_lists_newest_first_as_a_table_and_as_json(
    workspace: dict[str, Any],
) -> None:
    table = harvest("runs", workspace["path"])
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:4] == ["EXEC", "ID", "WORKFLOW", "WORKFLOW"]
    assert workspace["parked"] in lines[1]
    data = ok_json("runs", workspace["path"])
    assert [r["exec_id"] for r in data["executions"]] == [
        workspace["parked"],
        workspace["done"],
    ]
    assert data["next"] is None


def test_runs_filters_by_state_workflow_and_prefix(workspace: dict[str, Any]) -> None:
    path = workspace["path"]
    only = ok_json("runs", path, "--state", "completed")
    assert [r["exec_id"] for r in only["executions"]] == [workspace["done"]]
    by_prefix = ok_json("list", path, "--workflow", "report", "--id-prefix", "week")
    assert [r["workflow_id"] for r in by_prefix["executions"]] == ["weekly"]
    paged = ok_json("runs", path, "--limit", "1")
    assert paged["next"] is not None
    rest = ok_json("runs", path, "--limit", "1", "--cursor", str(paged["next"]))
    assert [r["exec_id"] for r in rest["executions"]] == [workspace["done"]]


def test_show_describes_a_run_with_payloads(workspace: dict[str, Any]) -> None:
    data = ok_json("show", workspace["path"], workspace["done"])
    assert data["state"] == "COMPLETED"
    assert data["input"] == "hello"
    assert data["output"] == "HELLO"
    text = harvest("describe", workspace["path"], workspace["parked"])
    assert text.returncode == 0
    assert "RUNNING" in text.stdout


def test_history_json_replays_with_todays_code_and_fails_on_changed_code(
    workspace: dict[str, Any], tmp_path: Path
) -> None:
    exported = harvest("history", workspace["path"], workspace["done"], "--json")
    assert exported.returncode == 0, exported.stderr
    events = json.loads(exported.stdout)["events"]
    assert events[0]["type"] == "WorkflowStarted"
    assert events[-1]["type"] == "WorkflowCompleted"
    saved = tmp_path / "history.json"
    saved.write_text(exported.stdout)
    good = harvest("replay", "--history", saved, "--module", "cli_flows")
    assert good.returncode == 0, good.stderr
    assert "ok: report replayed" in good.stdout
    direct = harvest(
        "replay", workspace["path"], workspace["done"], "--module", "cli_flows"
    )
    assert direct.returncode == 0, direct.stderr
    bad = harvest("replay", "--history", saved, "--module", "cli_flows_changed")
    assert bad.returncode == 1
    assert bad.stderr.startswith("harvest: ")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_counts_schedules_logs_and_ledger(workspace: dict[str, Any]) -> None:
    path = workspace["path"]
    counts = ok_json("counts", path)
    assert (counts["RUNNING"], counts["COMPLETED"], counts["FAILED"]) == (1, 1, 0)
    (schedule,) = ok_json("schedules", path)
    assert schedule["workflow_name"] == "report"
    assert schedule["schedule"] == {"cron": "0 3 * * *", "timezone": "UTC"}
    assert "cron 0 3 * * *" in harvest("schedules", path).stdout
    logs = ok_json("logs", path, workspace["done"])
    assert [line["message"] for line in logs] == ["summarising hello", "done"]
    ledger = ok_json("ledger", path, workspace["done"])
    assert ledger["totals"] == {
        "calls": 1,
        "input_tokens": 120,
        "output_tokens": 30,
        "latency": 0.25,
    }
    assert "TOTAL" in harvest("ledger", path, workspace["done"]).stdout


def test_purge_removes_old_terminal_runs_as_the_writer(
    workspace: dict[str, Any], tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(Path(workspace["path"]).read_bytes())
    # The runs closed at the manual clock's 2030 start, so from today's real
    # clock they closed in the future: a 30-day window keeps them.
    kept = ok_json("purge", copy, "--older-than", "30d")
    assert kept == {"removed": 0}
    conn = sqlite3.connect(copy)
    conn.execute(
        "UPDATE harvest_executions SET closed_at = 0 WHERE closed_at IS NOT NULL"
    )
    conn.commit()
    conn.close()
    assert ok_json("purge", copy, "--older-than", "30d") == {"removed": 1}
    assert [r["state"] for r in ok_json("runs", copy)["executions"]] == ["RUNNING"]


def test_purge_of_a_locked_file_fails_with_one_line(
    workspace: dict[str, Any], tmp_path: Path
) -> None:
    copy = tmp_path / "held.db"
    copy.write_bytes(Path(workspace["path"]).read_bytes())
    with SqliteRuntime.open(copy):
        done = harvest("purge", copy, "--older-than", "1d")
        # Reads still work beside the writer.
        assert harvest("counts", copy).returncode == 0
    assert done.returncode == 4
    assert "held by another writer" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        (("show", "{path}", "no-such-run"), "no execution with id no-such-run", 3),
        (("history", "{path}", "no-such-run"), "no execution with id no-such-run", 3),
        (("runs", "{missing}"), "no such file", 5),
        (("runs", "{foreign}"), "is not a harvest database", 5),
        (("runs", "{newer}"), "newer than this harvest supports", 5),
        (("runs", "{path}", "--state", "DONE"), "unknown state", 1),
        (("runs", "{path}", "--attr", "n=9223372036854775808"), "2^63", 1),
        (("purge", "{path}", "--older-than", "soon"), "cannot read 'soon'", 1),
        (("purge", "{path}", "--older-than", "inf"), "too long", 1),
        (("purge", "{empty}", "--older-than", "1d"), "no harvest schema", 5),
        (("purge", "{foreign}", "--older-than", "1d"), "is not a harvest database", 5),
        (("purge", "{missing}", "--older-than", "1d"), "no such file", 3),
        (("runs", "{path}", "--cursor", str(2**64)), "cursor", 1),
        (("runs", "{path}", "--workflow", ""), "workflow_name must be non-empty", 1),
        (("tail", "{path}", "--interval", "1e400"), "too long", 1),
        (("tail", "{path}", "--interval", "0"), "at least 50ms", 1),
    ],
)
def test_bad_input_exits_with_its_types_status_and_one_line(
    workspace: dict[str, Any],
    tmp_path: Path,
    args: tuple[str, ...],
    message: str,
    status: int,
) -> None:
    foreign = tmp_path / "notes.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    foreign_bytes = foreign.read_bytes()
    newer = tmp_path / "newer.db"
    newer.write_bytes(Path(workspace["path"]).read_bytes())
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 42")
    conn.close()
    empty = tmp_path / "empty.db"
    empty.touch()
    names = {
        "empty": empty,
        "path": workspace["path"],
        "missing": tmp_path / "gone.db",
        "foreign": foreign,
        "newer": newer,
    }
    done = harvest(*(a.format(**names) for a in args))
    assert done.returncode == status, done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    assert empty.read_bytes() == b""
    assert foreign.read_bytes() == foreign_bytes


def test_a_usage_error_exits_two(workspace: dict[str, Any]) -> None:
    done = harvest("runs")
    assert done.returncode == 2
    assert "Missing argument" in done.stderr
