"""Reading a descriptor on an asyncio loop, where the loop can: the wake channels' one way in."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable


def read_when_ready(
    loop: asyncio.AbstractEventLoop, fd: int, on_ready: Callable[[], object]
) -> bool:
    """Call `on_ready` whenever `fd` is readable, on `loop`; False when the loop cannot.

    A loop without readers (Windows' proactor loop raises NotImplementedError,
    a closed loop RuntimeError, a descriptor it refuses OSError) is no fault:
    the caller falls back to polling, the documented behaviour there.
    """
    try:
        loop.add_reader(fd, on_ready)
    except (NotImplementedError, RuntimeError, OSError):
        return False
    return True
