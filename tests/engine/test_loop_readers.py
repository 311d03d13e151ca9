"""read_when_ready: a readable descriptor calls back; a loop without readers says so instead."""

from __future__ import annotations

import asyncio
import os

import pytest

from harvest_engine.loop_readers import read_when_ready


async def test_a_readable_descriptor_calls_back() -> None:
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    heard = asyncio.Event()
    try:
        assert read_when_ready(loop, read_end, heard.set)
        os.write(write_end, b"x")
        await asyncio.wait_for(heard.wait(), 5)
    finally:
        loop.remove_reader(read_end)
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize("refusal", [NotImplementedError, RuntimeError, OSError])
def test_a_loop_without_readers_is_told_apart_so_the_caller_polls(
    refusal: type[Exception],
) -> None:
    class NoReaders(asyncio.SelectorEventLoop):
        def add_reader(self, *args: object) -> None:
            raise refusal("no readers here")

    loop = NoReaders()
    try:
        assert read_when_ready(loop, 0, lambda: None) is False
    finally:
        loop.close()
