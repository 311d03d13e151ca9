"""`harvest export` / `harvest import`: one closed run's history moved between SQLite and Postgres."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from harvest_engine import (
    ActivityContext,
    ManualClock,
    PostgresReader,
    SqliteReader,
    SqliteRuntime,
    WorkflowContext,
    WorkflowReplayer,
    activity,
    workflow,
)
from harvest_engine.cli import main as cli_main

if TYPE_CHECKING:
    from pathlib import Path

    from click.testing import Result


@activity
def fetch(ctx: ActivityContext, n: int) -> int:
    return n + 1


@activity
def double(ctx: ActivityContext, n: int) -> int:
    return n * 2


@activity
def label(ctx: ActivityContext, n: int) -> str:
    return f"got {n}"


@workflow
async def three_steps(ctx: WorkflowContext, n: int) -> str:
    a = await ctx.execute_activity(fetch, n)
    b = await ctx.execute_activity(double, a)
    return await ctx.execute_activity(label, b)


@workflow
async def waits_forever(ctx: WorkflowContext) -> None:
    await ctx.wait_for_signal("never")


def harvest(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli_main, list(args), input=stdin)


async def finished_run(path: Path) -> str:
    with SqliteRuntime.open(path, clock=ManualClock()) as rt:
        for act in (fetch, double, label):
            rt.register_activity(act)
        rt.register_workflow(three_steps)
        exec_id = str(rt.start_workflow("three_steps", 4))
        await rt.run_until_blocked(exec_id)
        return exec_id


def event_json(reader: SqliteReader | PostgresReader, exec_id: str) -> list[str]:
    with reader:
        return [e.to_json() for e in reader.load_history(exec_id)]


async def test_a_run_goes_sqlite_to_postgres_to_sqlite_with_identical_events(
    tmp_path: Path, pg_dsn: str
) -> None:
    source, back = tmp_path / "source.db", tmp_path / "back.db"
    exec_id = await finished_run(source)
    first, second = tmp_path / "one.json", tmp_path / "two.json"

    assert harvest("export", str(source), exec_id, "-o", str(first)).exit_code == 0
    imported = harvest("import", pg_dsn, str(first), "--json")
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.output)["state"] == "COMPLETED"
    assert harvest("export", pg_dsn, exec_id, "-o", str(second)).exit_code == 0
    assert harvest("import", str(back), str(second)).exit_code == 0

    original = event_json(SqliteReader.open(source), exec_id)
    assert event_json(PostgresReader.connect(pg_dsn), exec_id) == original
    assert event_json(SqliteReader.open(back), exec_id) == original
    assert first.read_bytes() == second.read_bytes()

    replayer = WorkflowReplayer([three_steps])
    for text in (first.read_text(), second.read_text()):
        result = replayer.replay(text)
        assert (result.workflow_name, result.closed) == ("three_steps", True)
    with PostgresReader.connect(pg_dsn) as reader:
        assert replayer.replay(reader.load_history(exec_id)).closed
        detail = reader.describe(exec_id)
        assert (detail.state, detail.output.get()) == ("COMPLETED", "got 10")
    shown = json.loads(harvest("show", str(back), exec_id, "--json").output)
    assert (shown["state"], shown["output"]) == ("COMPLETED", "got 10")


async def test_an_imported_run_is_a_closed_record_no_worker_drives(
    tmp_path: Path,
) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    exec_id = await finished_run(source)
    exported = harvest("export", str(source), exec_id).output
    assert harvest("import", str(target), "-", stdin=exported).exit_code == 0
    before = event_json(SqliteReader.open(target), exec_id)
    with SqliteRuntime.open(target, clock=ManualClock()) as rt:
        rt.register_workflow(three_steps)
        await rt.run_until_idle()
        assert rt.outcome(exec_id).is_terminal
    assert event_json(SqliteReader.open(target), exec_id) == before


async def test_importing_a_run_id_that_exists_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source.db"
    exec_id = await finished_run(source)
    out = tmp_path / "run.json"
    assert harvest("export", str(source), exec_id, "-o", str(out)).exit_code == 0
    before = event_json(SqliteReader.open(source), exec_id)

    refused = harvest("import", str(source), str(out))
    assert refused.exit_code == 1
    assert f"execution {exec_id} already exists" in refused.output
    assert event_json(SqliteReader.open(source), exec_id) == before


def _edit(doc: dict[str, Any], how: str) -> str:
    events = doc["events"]
    if how == "not json":
        return "{not json"
    if how == "no events":
        return json.dumps({"format": "harvest-history/1"})
    if how == "open run":
        doc["events"] = events[:-1]
    elif how == "seq gap":
        del events[2]
    elif how == "unreadable event":
        events[1]["at"] = "yesterday"
    elif how == "not started first":
        doc["events"] = events[1:]
        for i, e in enumerate(doc["events"]):
            e["seq"] = i + 1
    elif how == "state contradicts":
        doc["run"]["state"] = "FAILED"
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("not json", "not JSON"),
        ("no events", "no list of events"),
        ("open run", "has not ended"),
        ("seq gap", "has seq 4"),
        ("unreadable event", "event 2 cannot be read"),
        ("not started first", "not WorkflowStarted"),
        ("state contradicts", "does not match its last event"),
    ],
)
async def test_a_malformed_history_file_is_refused_naming_the_problem(
    tmp_path: Path, how: str, reason: str
) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    exec_id = await finished_run(source)
    doc = json.loads(harvest("export", str(source), exec_id).output)
    bad = tmp_path / "bad.json"
    bad.write_text(_edit(doc, how))

    refused = harvest("import", str(target), str(bad))
    assert refused.exit_code == 1, refused.output
    assert "cannot be imported" in refused.output
    assert reason in refused.output
    assert not target.exists()


async def test_a_missing_file_and_a_missing_run_are_typed_failures(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source.db"
    await finished_run(source)
    missing = harvest("import", str(source), str(tmp_path / "nope.json"))
    assert missing.exit_code == 1
    assert "nope.json cannot be imported" in missing.output
    no_run = harvest("export", str(source), "0123456789abcdef0123456789abcdef")
    assert no_run.exit_code == 3


async def test_an_open_run_is_exported_for_replay_but_not_imported(
    tmp_path: Path,
) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with SqliteRuntime.open(source, clock=ManualClock()) as rt:
        rt.register_workflow(waits_forever)
        exec_id = str(rt.start_workflow("waits_forever"))
        await rt.run_until_blocked(exec_id)
    text = harvest("export", str(source), exec_id).output
    assert WorkflowReplayer([waits_forever]).replay(text).closed is False
    refused = harvest("import", str(target), "-", stdin=text)
    assert refused.exit_code == 1
    assert "has not ended" in refused.output


async def test_a_terminated_run_keeps_its_state_and_reason(tmp_path: Path) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with SqliteRuntime.open(source, clock=ManualClock()) as rt:
        rt.register_workflow(waits_forever)
        exec_id = str(rt.start_workflow("waits_forever"))
        await rt.run_until_blocked(exec_id)
        rt.terminate(exec_id, "operator stop")
        await rt.run_until_blocked(exec_id)
    text = harvest("export", str(source), exec_id).output
    assert harvest("import", str(target), "-", stdin=text).exit_code == 0
    with SqliteReader.open(source) as a, SqliteReader.open(target) as b:
        was, now = a.describe(exec_id), b.describe(exec_id)
    assert (now.state, now.error.get()) == (was.state, was.error.get())
    assert now.state == "TERMINATED"
