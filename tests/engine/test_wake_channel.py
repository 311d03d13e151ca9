"""A file's wake channel: the serving process wakes a client in another process at once; polling stays the fallback."""

from __future__ import annotations

import asyncio
import os
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from harvest_engine import ExecutionOutcome, HarvestClient, SqliteRuntime
from harvest_engine.client import progress, waits, wakes
from harvest_engine.store.sqlite import wake_channel
from tests.engine.progress_child import chatter
from tests.engine.test_progress_durable import _kill, _serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import pytest


def _no_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every client poll and re-check once a minute: only a wake can answer in time."""
    for module, name in (
        (waits, "REPLY_POLL_SECONDS"),
        (waits, "RESULT_POLL_SECONDS"),
        (progress, "POLL_SECONDS"),
        (wakes, "SAFETY_RECHECK_SECONDS"),
        (wakes, "FIRST_PAUSE_SECONDS"),
    ):
        monkeypatch.setattr(module, name, 60.0)


async def _chat(client: HarvestClient) -> list[int]:
    """Start a chatter run, have it write 4 values and close; what a reader saw."""
    exec_id = await client.start_workflow("chatter", 2)
    assert await client.get_event(exec_id, "ready", timeout="30s") is True
    seen: list[int] = []

    async def read() -> None:
        async for _, value in client.read_stream(exec_id, "out"):
            seen.append(value)

    reader = asyncio.create_task(read())
    for word in ("go", "go", "end"):
        await client.send_signal(exec_id, "more", word)
    await reader
    assert await client.result(exec_id) == ExecutionOutcome.Completed(output="closed")
    return seen


async def test_a_serving_process_wakes_a_client_in_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.db"
    SqliteRuntime.open(path).close()
    proc = _serve(path)
    try:
        _no_polling(monkeypatch)
        with HarvestClient.open(path) as client:
            async with asyncio.timeout(20):  # a missed wake would wait a minute
                assert await _chat(client) == [0, 1, 2, 3]
    finally:
        _kill(proc)


@asynccontextmanager
async def _serving(path: Path) -> AsyncIterator[SqliteRuntime]:
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(chatter)
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
        await asyncio.sleep(0.05)
        try:
            yield rt
        finally:
            stop.set()
            await asyncio.wait_for(server, 10)


async def test_a_client_without_the_channel_polls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wakes.WakeClient, "open", classmethod(lambda cls, path: None))
    path = tmp_path / "w.db"
    async with _serving(path):
        with HarvestClient.open(path) as client:
            assert await _chat(client) == [0, 1, 2, 3]
    folder = wake_channel.wake_dir(str(path))
    assert folder is not None
    assert not folder.exists()  # the server took its socket and the folder along


async def test_a_client_polls_when_no_server_hears_it(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    async with _serving(path):
        folder = wake_channel.wake_dir(str(path))
        assert folder is not None
        (folder / wake_channel.SERVER_NAME).unlink()  # the server is deaf now
        with HarvestClient.open(path) as client:
            assert await _chat(client) == [0, 1, 2, 3]


def test_a_long_path_gets_its_channel_under_the_temp_folder(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 90) / "runs.db"
    folder = wake_channel.wake_dir(str(deep))
    assert folder is not None
    assert not str(folder).startswith(str(tmp_path))
    assert len(str(folder / "c-4194304-abcdef01")) <= wake_channel.MAX_SOCKET_PATH
    assert wake_channel.wake_dir(str(deep)) == folder  # both sides find the same one
    near = Path(tempfile.mkdtemp(prefix="w"))
    try:
        short = wake_channel.wake_dir(str(near / "r.db"))
        assert short == Path(os.path.realpath(near)) / "r.db-wake"
    finally:
        near.rmdir()
    assert wake_channel.wake_dir(":memory:") is None
