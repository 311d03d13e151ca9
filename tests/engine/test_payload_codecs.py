"""Payload codecs: an encoded file holds no plaintext, needs its codec, and reads whole with it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
import pytest

from harvest_engine import (
    ActivityContext,
    Batch,
    CodecRequired,
    HarvestClient,
    PostgresRuntime,
    RunState,
    Runtime,
    Schedule,
    SqliteReader,
    SqliteRuntime,
    WorkflowContext,
    WorkflowSchedule,
    activity,
    workflow,
)
from harvest_engine.codecs import AesGcmCodec, GzipCodec, PayloadCodec, ZstdCodec
from harvest_engine.store.postgres.reader import PostgresReader
from harvest_engine.store.sql.payload_columns import (
    Targets,
    encode_params,
    encoded_targets,
)
from tests.engine.codec_keys import AES, WRONG

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.pg_server import PostgresServer

R = TypeVar("R", bound=Runtime)
ROOT = Path(__file__).resolve().parents[2]
CODEC_SPEC = "tests.engine.codec_keys:AES"

SECRET = "PLAINTEXT-SECRET-42"
"""Put in every payload: it must not be found in the file's bytes."""


@activity
async def shout(ctx: ActivityContext, text: str) -> str:
    ctx.heartbeat({"progress": SECRET})
    return f"{text} {SECRET} result"


@workflow
async def kid(ctx: WorkflowContext, arg: dict[str, Any]) -> str:
    return f"child got {arg['secret']}"


@workflow
async def secretive(ctx: WorkflowContext, arg: dict[str, Any]) -> dict[str, Any]:
    ctx.log(f"log line {SECRET}")
    ctx.register_query("peek", lambda: {"q": SECRET})

    async def bump(value: str) -> str:
        return f"updated {value}"

    ctx.register_update_handler("bump", None, bump)
    ctx.set_event("phase", {"p": SECRET})
    ctx.write_stream("tokens", {"t": SECRET})
    ctx.set_current_details(f"details {SECRET}")
    shouted = await ctx.execute_activity(shout, arg["secret"])
    signal = await ctx.wait_for_signal("go")
    child = await ctx.spawn_child_workflow(kid, {"secret": SECRET})
    if arg.get("again"):
        ctx.continue_as_new({"secret": SECRET, "again": False})
    return {"shouted": shouted, "signal": signal, "child": child}


@workflow(batch=Batch(max_size=100, max_wait="1h"), name="held_bag")
async def held_bag(ctx: WorkflowContext, items: list[Any]) -> list[Any]:
    return items


def _register(rt: R) -> R:
    rt.register_workflow(held_bag)
    rt.register_workflow(secretive)
    rt.register_workflow(kid)
    rt.register_activity(shout)
    return rt


def _file_bytes(path: Path) -> bytes:
    found = b""
    for suffix in ("", "-wal"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            found += part.read_bytes()
    return found


async def _drive(rt: Runtime, exec_id: Any) -> Any:
    state = await rt.run_until_blocked(exec_id)
    assert isinstance(state, RunState.WaitingSignal), state
    assert await rt.query(exec_id, "peek") == {"q": SECRET}
    assert await rt.update(exec_id, "bump", SECRET) == f"updated {SECRET}"
    rt.send_signal(exec_id, "go", {"s": SECRET})
    return await rt.run_until_blocked(exec_id)


class Encoded:
    """Where an encoded test database lives: a file, or a Postgres database, and its raw bytes."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.postgres = request.param == "postgres"
        self.server: PostgresServer | None = None
        if self.postgres:
            self.server = request.getfixturevalue("pg_server")
            self.where = self.server.create_database()
        else:
            self.where = str(tmp_path / "secret.db")

    def runtime(self, codec: PayloadCodec | None = AES) -> Runtime:
        if self.postgres:
            return _register(PostgresRuntime.connect(self.where, codec=codec))
        return _register(SqliteRuntime.open(self.where, codec=codec))

    def reader(self, codec: PayloadCodec | None = AES) -> SqliteReader | PostgresReader:
        if self.postgres:
            return PostgresReader.connect(self.where, codec=codec)
        return SqliteReader.open(self.where, codec=codec)

    def client(self, codec: PayloadCodec | None = AES) -> HarvestClient:
        if self.postgres:
            return HarvestClient.connect(self.where, codec=codec)
        return HarvestClient.open(self.where, codec=codec)

    def raw(self) -> bytes:
        """Every byte the store keeps: the file and its WAL, or every harvest table's rows."""
        if not self.postgres:
            return _file_bytes(Path(self.where))
        with psycopg.connect(self.where, autocommit=True) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            ]
            return "".join(
                str(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables
            ).encode()

    def drop(self) -> None:
        if self.server is not None:
            self.server.drop_database(self.where)


@pytest.fixture(params=["sqlite", "postgres"])
def encoded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Encoded]:
    found = Encoded(request, tmp_path)
    yield found
    found.drop()


async def test_encrypted_store_holds_no_plaintext_and_reads_whole(
    encoded: Encoded,
) -> None:
    with encoded.runtime() as rt:
        rt.upsert_schedule(
            WorkflowSchedule("kid", Schedule.every("1h"), input={"secret": SECRET})
        )
        exec_id = rt.start_workflow("secretive", {"secret": SECRET, "again": True})
        bag = [rt.start_workflow("held_bag", {"held": SECRET}) for _ in range(2)]
        assert bag[0] == bag[1]  # held in one batch: its inputs wait in the store
        first = await _drive(rt, exec_id)
        assert isinstance(first, RunState.ContinuedAsNew), first
        second = await _drive(rt, first.next)
        assert isinstance(second, RunState.Completed), second
        assert second.output["child"] == f"child got {SECRET}"
        assert rt.events(first.next)["phase"] == {"p": SECRET}
        assert SECRET.encode() not in encoded.raw()
    raw = encoded.raw()
    assert SECRET.encode() not in raw
    assert b"~hc1:" in raw  # the payloads are there, encoded

    with pytest.raises(CodecRequired):
        encoded.reader(None)
    with pytest.raises(CodecRequired):
        encoded.runtime(None)
    with pytest.raises(CodecRequired, match="wrong key"):
        encoded.reader(WRONG)
    with encoded.reader() as reader:
        detail = reader.describe(exec_id)
        assert detail.input.value == {"secret": SECRET, "again": True}
        history = reader.load_history(first.next)
        assert any(SECRET in str(e.attrs) for e in history)
        assert reader.describe(first.next).output.value["signal"] == {"s": SECRET}


async def test_client_commands_cross_with_the_same_codec(encoded: Encoded) -> None:
    with encoded.runtime() as rt:
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
        try:
            with pytest.raises(CodecRequired):
                encoded.client(None)
            with encoded.client() as client:
                exec_id = await client.start_workflow("secretive", {"secret": SECRET})
                await asyncio.sleep(0.05)
                assert await client.query(exec_id, "peek") == {"q": SECRET}
                assert await client.update(exec_id, "bump", "x") == "updated x"
                await client.send_signal(exec_id, "go", SECRET)
                outcome = await client.result(exec_id, timeout="10s")
                assert outcome.output["signal"] == SECRET
        finally:
            stop.set()
            await asyncio.wait_for(server, 10)
    assert SECRET.encode() not in encoded.raw()


@pytest.mark.parametrize(
    "codec",
    [GzipCodec(), ZstdCodec(level=3), AesGcmCodec(bytes(16))],
    ids=["gzip", "zstd", "aes"],
)
def test_each_shipped_codec_round_trips(codec: Any) -> None:
    data = b'{"a": "' + SECRET.encode() * 20 + b'"}'
    assert codec.decode(codec.encode(data)) == data


async def test_a_plain_file_stays_plain_and_opens_without_a_codec(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain.db"
    with _register(SqliteRuntime.open(path)) as rt:
        exec_id = rt.start_workflow("kid", {"secret": SECRET})
        await rt.run_until_blocked(exec_id)
    assert SECRET.encode() in _file_bytes(path)
    with SqliteReader.open(path) as reader:
        assert reader.describe(exec_id).output.value == f"child got {SECRET}"


def _harvest(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("HARVEST_CODEC", None)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


async def test_the_cli_needs_the_codec_and_reads_everything_with_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cli.db"
    with _register(SqliteRuntime.open(path, codec=AES)) as rt:
        exec_id = rt.start_workflow("kid", {"secret": SECRET})
        await rt.run_until_blocked(exec_id)
    refused = _harvest("show", path, exec_id)
    assert refused.returncode == 9, refused.stderr
    assert "--codec" in refused.stderr
    wrong = _harvest(
        "history", path, exec_id, "--codec", "tests.engine.codec_keys:WRONG"
    )
    assert wrong.returncode == 9, wrong.stderr
    shown = _harvest("show", path, exec_id, "--json", "--codec", CODEC_SPEC)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["output"] == f"child got {SECRET}"
    history = _harvest("history", path, exec_id, "--json", "--codec", CODEC_SPEC)
    assert history.returncode == 0, history.stderr
    assert SECRET in history.stdout
    bad = _harvest("show", path, exec_id, "--codec", "no_such_module:X")
    assert bad.returncode == 2, bad.stderr


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "INSERT INTO harvest_tasks (exec_id, activity_id, input, queue) "
            "VALUES (?, ?, ?, ?) RETURNING id",
            Targets(positions=(2,)),
        ),
        (
            "UPDATE harvest_tasks SET status = 'PENDING', attempt = ?, last_error = ? "
            "WHERE id = ?",
            Targets(positions=(1,)),
        ),
        (
            "WITH sealed AS (UPDATE harvest_executions SET state = %(state)s, "
            "output = %(output)s, error = %(error)s WHERE exec_id = %(id)s RETURNING "
            "exec_id) SELECT 1",
            Targets(names=frozenset({"output", "error"})),
        ),
        (
            "WITH moved AS (UPDATE harvest_executions SET next_seq = %(end)s WHERE "
            "exec_id = %(id)s RETURNING exec_id) INSERT INTO harvest_events (exec_id, "
            "seq, type, at, attrs) SELECT moved.exec_id, e.seq, e.type, e.at, e.attrs "
            "FROM moved, unnest(%(seqs)s::integer[], %(types)s::text[], "
            "%(ats)s::bigint[], %(attrs)s::text[]) AS e(seq, type, at, attrs)",
            Targets(lists=frozenset({"attrs"})),
        ),
        (
            "UPDATE harvest_executions SET search_attributes = ? WHERE exec_id = ?",
            Targets(),
        ),
        ("INSERT INTO harvest_timers (exec_id, timer_id) VALUES (?, ?)", Targets()),
    ],
)
def test_the_payload_parameters_of_a_statement(sql: str, expected: Targets) -> None:
    mark = "%s" if "%(" in sql else "?"
    assert encoded_targets(sql, mark) == expected


def test_a_refused_reply_stays_plain_and_none_stays_none() -> None:
    targets = Targets(positions=(0, 1, 2))
    refused = '{"error": {"type": "WorkflowAlreadyStarted"}}'
    out = encode_params(AES, (refused, None, '"ok"'), targets)
    assert out[:2] == (refused, None)
    assert out[2].startswith("~hc1:")


async def test_a_client_in_another_process_starts_with_the_same_codec(
    tmp_path: Path,
) -> None:
    path = tmp_path / "served.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HARVEST_CODEC=CODEC_SPEC)
    with _register(SqliteRuntime.open(path, codec=AES)) as rt:
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
        try:
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "harvest_engine",
                "start",
                str(path),
                "kid",
                json.dumps({"secret": SECRET}),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=ROOT,
            )
            out, err = await asyncio.wait_for(child.communicate(), 60)
            assert child.returncode == 0, err.decode()
            exec_id = out.decode().split()[-1]
            await asyncio.sleep(0.05)
            for _ in range(200):
                if rt.describe(exec_id).state == "COMPLETED":
                    break
                await asyncio.sleep(0.05)
            assert rt.describe(exec_id).output.value == f"child got {SECRET}"
        finally:
            stop.set()
            await asyncio.wait_for(server, 10)
    assert SECRET.encode() not in _file_bytes(path)
