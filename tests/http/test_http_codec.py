"""`harvest http --codec` and `create_app(..., codec=)`: an encoded store is served decoded, or refused clearly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from click.testing import CliRunner

from harvest_engine import (
    CodecRequired,
    PostgresRuntime,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.cli import main
from harvest_engine.cli.http_api import _app
from harvest_engine.http import create_app
from tests.engine.codec_keys import AES, WRONG
from tests.http.served_api import uvicorn_on_free_port

if TYPE_CHECKING:
    from tests.stores import Databases

ROOT = Path(__file__).resolve().parents[2]
SECRET = "the-launch-code-0451"
CODEC_SPEC = "tests.engine.codec_keys:AES"


@workflow
async def keeper(ctx: WorkflowContext, kept: dict[str, str]) -> dict[str, str]:
    return kept


def encoded_store(databases: Databases, db_path: Path) -> tuple[str, str]:
    """A store written with the AES codec holding one run with SECRET; (where, exec_id)."""
    if databases.server is None:
        where = str(db_path)
        rt = SqliteRuntime.open(where, codec=AES)
    else:
        where = databases.dsn(db_path)
        rt = PostgresRuntime.connect(where, codec=AES)
    with rt:
        rt.register_workflow(keeper)
        exec_id = str(rt.start_workflow("keeper", {"secret": SECRET}))
    return where, exec_id


async def test_create_app_reads_an_encoded_store_with_its_codec(
    databases: Databases, db_path: Path
) -> None:
    where, exec_id = encoded_store(databases, db_path)
    with pytest.raises(CodecRequired):
        create_app(where)
    with pytest.raises(CodecRequired, match="wrong key"):
        create_app(where, codec=WRONG)
    async with (
        uvicorn_on_free_port(_app(where, None, False, AES)) as base,
        httpx.AsyncClient() as http,
    ):
        got = await http.get(f"{base}/api/v1/runs/{exec_id}")
        assert got.status_code == 200, got.text
        assert got.json()["input"] == {"secret": SECRET}
        history = await http.get(f"{base}/api/v1/runs/{exec_id}/history")
        assert SECRET in history.text


def test_a_runtime_target_takes_no_codec(db_path: Path) -> None:
    with (
        SqliteRuntime.open(db_path, codec=AES) as rt,
        pytest.raises(ValueError, match="codec it was opened with"),
    ):
        create_app(rt, codec=AES)


def test_harvest_http_needs_the_codec_and_serves_the_file_decoded_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "secret.db"
    with SqliteRuntime.open(db, codec=AES) as rt:
        rt.register_workflow(keeper)
        exec_id = str(rt.start_workflow("keeper", {"secret": SECRET}))
    monkeypatch.delenv("HARVEST_CODEC", raising=False)
    runner = CliRunner()
    refused = runner.invoke(main, ["http", str(db), "--port", "0"])
    assert refused.exit_code == 9, refused.output  # before anything listens
    assert "--codec" in refused.output
    wrong = ["http", str(db), "--port", "0", "--codec", "tests.engine.codec_keys:WRONG"]
    assert runner.invoke(main, wrong).exit_code == 9
    bad = runner.invoke(main, ["http", str(db), "--codec", "no_such_module:X"])
    assert bad.exit_code == 2

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("HARVEST_CODEC", None)
    command = [sys.executable, "-m", "harvest_engine", "http", str(db)]
    proc = subprocess.Popen(
        [*command, "--port", "0", "--codec", CODEC_SPEC],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line
        base = line.split()[1]  # http://127.0.0.1:PORT/api/v1
        got = httpx.get(f"{base}/runs/{exec_id}", timeout=10)
        assert got.status_code == 200, got.text
        assert got.json()["input"] == {"secret": SECRET}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
