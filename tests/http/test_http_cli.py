"""`harvest http`: it refuses a network host without a token, and a missing extra says which."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import httpx
from click.testing import CliRunner

from harvest_engine import SqliteRuntime
from harvest_engine.cli import main
from harvest_engine.cli.http_api import _app, host_name, is_loopback
from tests.http.served_api import uvicorn_on_free_port
from tests.test_readme import env

if TYPE_CHECKING:
    from pathlib import Path


def test_only_loopback_hosts_go_without_a_token() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.org"))


def test_a_host_header_names_its_host_without_the_port() -> None:
    assert [
        host_name(h) for h in ("127.0.0.1:8765", "[::1]:80", "localhost", "::1")
    ] == [
        "127.0.0.1",
        "::1",
        "localhost",
        "::1",
    ]


async def test_without_a_token_only_requests_naming_this_machine_get_through(
    tmp_path: Path,
) -> None:
    db = tmp_path / "w.db"
    SqliteRuntime.open(db).close()
    async with (
        uvicorn_on_free_port(_app(db, None, False)) as base,
        httpx.AsyncClient() as http,
    ):
        ok = await http.get(f"{base}/api/v1/counts")
        assert ok.status_code == 200
        for name in ("rebound.example.org:8765", "10.1.2.3"):
            got = await http.get(f"{base}/api/v1/counts", headers={"Host": name})
            assert got.status_code == 403
            assert got.json()["error"]["type"] == "UntrustedHost"
        local = await http.get(f"{base}/api/v1/counts", headers={"Host": "localhost:1"})
        assert local.status_code == 200
    async with (
        uvicorn_on_free_port(_app(db, "t0k", False)) as base,
        httpx.AsyncClient() as http,
    ):
        named = await http.get(
            f"{base}/api/v1/counts",
            headers={"Host": "harvest.example.org", "Authorization": "Bearer t0k"},
        )
        assert named.status_code == 200  # with a token, any name may reach it


def test_a_network_host_without_a_token_or_with_a_blank_one_does_not_start(
    tmp_path: Path,
) -> None:
    db = tmp_path / "w.db"
    SqliteRuntime.open(db).close()
    runner = CliRunner()
    refused = runner.invoke(main, ["http", str(db), "--host", "0.0.0.0"])
    assert refused.exit_code == 2
    assert "refusing to listen on 0.0.0.0 without a token" in refused.output
    blank = tmp_path / "token.txt"
    blank.write_text("\n")
    empty = runner.invoke(main, ["http", str(db), "--token-file", str(blank)])
    assert empty.exit_code == 1
    assert "holds no token" in empty.output
    missing = runner.invoke(main, ["http", str(tmp_path / "nope.db"), "--port", "0"])
    assert missing.exit_code == 5  # NotAHarvestDatabase, before anything listens


_WITHOUT_STARLETTE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("starlette", "uvicorn"):
            raise ImportError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
import harvest_engine, harvest_engine.cli
from harvest_engine.cli import main
main(["http", sys.argv[1]], prog_name="harvest")
"""


def test_without_the_http_extra_harvest_imports_and_harvest_http_names_the_extra(
    tmp_path: Path,
) -> None:
    db = tmp_path / "w.db"
    SqliteRuntime.open(db).close()
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_STARLETTE, str(db)],
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "pip install 'harvest[http]'" in done.stderr
