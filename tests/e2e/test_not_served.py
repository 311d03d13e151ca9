"""A client command on a store nobody serves says so within about a second, and can be withdrawn.

The serving process records a heartbeat; a client whose command sees none
recent raises `NotServed` (a `CommandTimedOut`) instead of waiting out its
whole timeout. The command stays queued under its id: a serving process
started later applies it, or `withdraw` removes it (refused once applied).
Real processes: a serving process killed with SIGKILL, then a client.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from click.testing import CliRunner

from harvest_engine import (
    CommandTimedOut,
    ExecutionOutcome,
    HarvestClient,
    NotServed,
    PostgresRuntime,
    SqliteRuntime,
)
from harvest_engine.cli import main

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator
    from pathlib import Path

    from conftest import Workers

    from tests.pg_server import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A harvest store of either kind, made and closed: no process serves it yet."""
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("pg_server")
        dsn = server.create_database()
        PostgresRuntime.connect(dsn).close()
        yield dsn
        server.drop_database(dsn)
    else:
        path = tmp_path / "flows.db"
        SqliteRuntime.open(path).close()
        yield str(path)


def client_of(where: str) -> HarvestClient:
    if where.startswith("postgresql://"):
        return HarvestClient.connect(where)
    return HarvestClient.open(where)


def command_rows(where: str) -> list[tuple[Any, ...]]:
    """(command_id, applied) of every command row."""
    sql = "SELECT command_id, applied_at IS NOT NULL FROM harvest_commands ORDER BY id"
    if where.startswith("postgresql://"):
        with psycopg.connect(where, autocommit=True) as conn:
            return [(r[0], bool(r[1])) for r in conn.execute(sql).fetchall()]
    conn = sqlite3.connect(where)
    try:
        return [(r[0], bool(r[1])) for r in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def serve(workers: Workers, where: str) -> subprocess.Popen[str]:
    """A serving process on `where`, once it has the store open."""
    proc = workers.spawn("serve_worker", where)
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    assert first == "serving", proc.stderr.read() if proc.stderr else first
    return proc


async def start_timed(where: str, **kw: Any) -> tuple[float, NotServed]:
    """Start a greet run with a 10 s timeout; (seconds taken, the NotServed raised)."""
    with client_of(where) as client:
        began = time.monotonic()
        with pytest.raises(NotServed) as raised:
            await client.start_workflow("greet", "ann", timeout="10s", **kw)
        return time.monotonic() - began, raised.value


def test_a_command_nobody_serves_raises_not_served_within_about_a_second(
    where: str,
) -> None:
    took, err = asyncio.run(start_timed(where))
    assert took < 2.5, took
    assert isinstance(err, CommandTimedOut)
    assert err.command_id in str(err)
    assert "no process serves" in str(err)
    assert command_rows(where) == [(err.command_id, False)]  # still queued


def test_a_killed_server_is_noticed_and_its_queued_command_withdrawn(
    where: str, workers: Workers
) -> None:
    proc = serve(workers, where)
    with client_of(where) as client:
        ran = asyncio.run(client.start_workflow("greet", "bob", timeout="10s"))
        done = asyncio.run(client.result(ran, timeout="10s"))
        assert done == ExecutionOutcome.Completed(output={"greeted": "bob"})
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    took, err = asyncio.run(start_timed(where))
    assert took < 6.0, took  # the last beat ages past SERVED_WITHIN, not 10 s
    with client_of(where) as client:
        assert client.withdraw(err.command_id) is True
        assert client.withdraw(err.command_id) is False  # nothing queued any more
        assert client.command_applied(err.command_id) is None
    assert [row for row in command_rows(where) if not row[1]] == []


def test_a_queued_command_is_applied_by_a_later_server_and_then_cannot_be_withdrawn(
    where: str, workers: Workers
) -> None:
    _, err = asyncio.run(start_timed(where, command_id="order-1"))
    assert err.command_id == "order-1"
    proc = serve(workers, where)
    try:
        with client_of(where) as client:
            exec_id = asyncio.run(
                client.start_workflow(
                    "greet", "ann", timeout="10s", command_id="order-1"
                )
            )
            assert client.withdraw("order-1") is False
            assert client.command_applied("order-1") is True
            assert len(client.list_executions().executions) == 1
            assert str(exec_id)
    finally:
        proc.send_signal(signal.SIGTERM)
        workers.finish(proc)


def test_harvest_says_no_process_serves_the_file_and_withdraws_the_command(
    where: str, workers: Workers
) -> None:
    runner = CliRunner()
    began = time.monotonic()
    got = runner.invoke(main, ["start", where, "greet", '"ann"'])
    assert time.monotonic() - began < 2.5
    assert got.exit_code == 8, got.output
    assert "no process serves" in got.output
    command_id = got.output.strip().rsplit(" ", 1)[-1]
    assert f"harvest withdraw {command_id}" not in got.output  # FILE comes first
    assert f"withdraw {client_path(where)} {command_id}" in got.output
    assert command_rows(where) == [(command_id, False)]
    gone = runner.invoke(main, ["withdraw", where, command_id])
    assert gone.exit_code == 0, gone.output
    assert "withdrawn" in gone.output
    assert command_rows(where) == []
    missing = runner.invoke(main, ["withdraw", where, command_id])
    assert missing.exit_code == 3, missing.output
    assert f"no command {command_id} is queued" in missing.output
    proc = serve(workers, where)
    try:
        applied = runner.invoke(
            main, ["start", where, "greet", '"bo"', "--command-id", "c9"]
        )
        assert applied.exit_code == 0, applied.output
    finally:
        proc.send_signal(signal.SIGTERM)
        workers.finish(proc)
    refused = runner.invoke(main, ["withdraw", where, "c9"])
    assert refused.exit_code == 1, refused.output
    assert "was applied already" in refused.output


def client_path(where: str) -> str:
    with client_of(where) as client:
        return client.path
