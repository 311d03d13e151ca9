"""A serving process and client processes on one file: commands applied once, across kills of either."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result
from conftest import PROCESS_TIMEOUT, ROOT, child_env

from harvest_engine import (
    ExecutionFilter,
    ExecutionId,
    ExecutionNotFound,
    HarvestClient,
    QueryNotFound,
    SqliteReader,
    SqliteRuntime,
    UnknownWorkflow,
    WorkflowAlreadyStarted,
)
from harvest_engine.cli import main

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Workers


def new_file(path: Path) -> Path:
    """A harvest file at the current schema, closed (no process serves it yet)."""
    SqliteRuntime.open(path).close()
    return path


def serve(workers: Workers, db: Path, *extra: str) -> subprocess.Popen[str]:
    """Start a serving process and wait until it has the file open."""
    proc = workers.spawn("serve_worker", db, *extra)
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    assert first == "serving", proc.stderr.read() if proc.stderr else first
    return proc


def stop(workers: Workers, proc: subprocess.Popen[str]) -> str:
    """SIGTERM a serving process (the README's two-line pattern) and wait for its clean exit."""
    proc.send_signal(signal.SIGTERM)
    done = workers.finish(proc)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of a query on a private read-only connection."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def applied_count(db: Path) -> int:
    return rows(
        db, "SELECT COUNT(*) FROM harvest_commands WHERE applied_at IS NOT NULL"
    )[0][0]


def greet_inputs(db: Path) -> list[Any]:
    """The input of every greet run (each command's own number)."""
    with SqliteReader.open(db) as reader:
        inputs: list[Any] = []
        reader.visit_executions(
            ExecutionFilter().workflow_name("greet").limit(1000),
            lambda d: inputs.append(d.input.value),
        )
    return sorted(inputs, key=lambda v: (isinstance(v, dict), json.dumps(v)))


def test_client_processes_talk_to_runs_of_a_serving_process(
    workers: Workers, tmp_path: Path
) -> None:
    db = new_file(tmp_path / "served.db")
    server = serve(workers, db)
    with SqliteReader.open(db) as reader:
        first = workers.spawn("client_worker", db, "session", "ann")
        second = workers.spawn("client_worker", db, "session", "bob")
        outs = [json.loads(workers.finish(p).stdout) for p in (first, second)]
        for out, name in zip(outs, ["ann", "bob"], strict=True):
            assert out["label"] == f"{name}: first"
            assert out["rejected"] == "UpdateRejected"
            assert out["lines"] == {"owner": name, "lines": ["hi", "there"]}
            assert out["output"] == ["hi", "there"]
        # A reader beside both sees every run; it takes no lock and writes nothing.
        states = {r.workflow_id: r.state for r in reader.list_executions().executions}
        assert sorted(states.values()) == ["COMPLETED", "COMPLETED"]
    stop(workers, server)


def test_typed_errors_cross_the_process_boundary(
    workers: Workers, tmp_path: Path
) -> None:
    db = new_file(tmp_path / "errors.db")
    server = serve(workers, db)

    async def talk() -> None:
        with HarvestClient.open(db) as client:
            with pytest.raises(UnknownWorkflow):
                await client.start_workflow("nope")
            with pytest.raises(ExecutionNotFound) as missing:
                await client.send_signal("no-run", "say", 1)
            assert missing.value.exec_id == ExecutionId("no-run")
            started = await client.start_workflow_with_id("session", "s-1", "x")
            with pytest.raises(WorkflowAlreadyStarted) as refused:
                await client.start_workflow_with_reuse_policy(
                    "session", "s-1", "x", "REJECT_DUPLICATE"
                )
            assert refused.value.exec_id == started
            with pytest.raises(QueryNotFound):
                await client.query(started, "nope")

    asyncio.run(talk())
    stop(workers, server)


def test_a_command_with_no_server_times_out_and_is_applied_by_a_later_server(
    workers: Workers, tmp_path: Path
) -> None:
    db = new_file(tmp_path / "late.db")
    out = workers.run_json(
        "client_worker", db, "call", "start_workflow", '["greet", 7]', "100ms"
    )
    assert "timed_out" in out
    assert greet_inputs(db) == []
    server = serve(workers, db)
    workers.wait_for(lambda: greet_inputs(db) == [7], "the late apply", server)
    stop(workers, server)
    assert greet_inputs(db) == [7]
    assert rows(
        db, "SELECT COUNT(*), SUM(applied_at IS NOT NULL) FROM harvest_commands"
    ) == [(1, 1)]


def test_kill_9_of_the_server_with_commands_queued_applies_each_exactly_once(
    workers: Workers, tmp_path: Path
) -> None:
    db = new_file(tmp_path / "killed.db")
    count = 60
    flooded = workers.run("client_worker", db, "flood", str(count))
    assert flooded.returncode == 0, flooded.stderr
    server = serve(workers, db, "--slow-apply", "0.01")
    workers.wait_for(lambda: applied_count(db) >= 5, "a few applied commands", server)
    workers.sigkill(server)
    partial = applied_count(db)
    assert partial < count
    assert len(greet_inputs(db)) == partial  # effect and reply committed together
    server = serve(workers, db)
    workers.wait_for(
        lambda: applied_count(db) == count, "every command applied", server
    )
    stop(workers, server)
    assert greet_inputs(db) == sorted(range(count), key=json.dumps)


def test_kill_9_of_a_client_mid_write_leaves_each_command_whole_or_absent(
    workers: Workers, tmp_path: Path
) -> None:
    db = new_file(tmp_path / "client_killed.db")
    flooder = workers.spawn("client_worker", db, "flood", "100000")
    assert flooder.stdout is not None
    for _ in range(30):
        flooder.stdout.readline()
    workers.sigkill(flooder)
    queued = rows(db, "SELECT kind, args FROM harvest_commands ORDER BY id")
    assert len(queued) >= 30
    assert all(kind == "start_workflow" for kind, _ in queued)
    numbers = [json.loads(args)["input"] for _, args in queued]
    assert numbers == list(range(len(queued)))
    server = serve(workers, db)
    workers.wait_for(
        lambda: applied_count(db) == len(queued), "every queued command", server
    )
    stop(workers, server)
    assert greet_inputs(db) == sorted(numbers, key=json.dumps)


def harvest_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`python -m harvest_engine ...` in a fresh interpreter (the real entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *map(str, args)],
        env=child_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        check=False,
    )


def harvest_here(*args: str | Path) -> Result:
    """The `harvest` command in this process (a client here, the server in its own)."""
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_harvest_command_drives_runs_of_a_serving_process(
    workers: Workers, tmp_path: Path
) -> None:
    db = new_file(tmp_path / "cli.db")
    queued = harvest_cli("start", db, "greet", '{"n": 1}', "--timeout", "50ms")
    assert queued.returncode == 8
    assert queued.stderr.count("\n") == 1
    assert "stays queued" in queued.stderr
    server = serve(workers, db)
    started = harvest_cli("start", db, "session", '"cli"', "--id", "chat-1")
    assert started.returncode == 0, started.stderr
    exec_id = started.stdout.strip()
    said = harvest_here("signal", db, exec_id, "say", '"hello"', "--json")
    assert json.loads(said.output) == {"delivered": True, "exec_id": exec_id}
    keyed = [
        harvest_here("signal", db, exec_id, "say", '"x"', "--key", "k") for _ in "ab"
    ]
    assert [k.output.split()[0] for k in keyed] == ["signalled", "already"]
    asked = harvest_here("query", db, exec_id, "lines")
    assert json.loads(asked.output) == {"owner": "cli", "lines": ["hello", "x"]}
    labelled = harvest_here("update", db, exec_id, "label", '"topic"', "--json")
    assert json.loads(labelled.output) == {"result": "cli: topic"}
    rejected = harvest_here("update", db, exec_id, "label", '""')
    assert rejected.exit_code == 1
    assert rejected.output.startswith("harvest: update 'label' rejected")
    harvest_here("signal", db, exec_id, "say", '"bye"')
    result = harvest_cli("result", db, exec_id)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["hello", "x"]
    other = harvest_here("start", db, "session", '"two"').output.strip()
    assert harvest_here("cancel", db, other, "enough").exit_code == 0
    ended = harvest_here("result", db, other, "--json")
    assert ended.exit_code == 1
    assert json.loads(ended.output) == {"state": "CANCELLED", "reason": "enough"}
    gone = harvest_here("terminate", db, "no-such-run")
    assert gone.exit_code == 3
    assert harvest_here("start", db, "greet", "{not json").exit_code == 2
    stop(workers, server)
    # The start queued before the server ran was applied once it did.
    assert {"n": 1} in greet_inputs(db)
