"""`ctx.wait`, `ctx.as_completed`: asyncio's combinators with a deterministic order.

asyncio's `wait` returns sets; workflow code needs the same order on every
replay, so these keep input order (`wait`) and completion order with ties
in input order (`as_completed`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Iterable, Iterator


async def wait(
    aws: Iterable[Awaitable[Any]], *, return_when: str
) -> tuple[list[asyncio.Future[Any]], list[asyncio.Future[Any]]]:
    """`(done, pending)` of `aws` once `return_when` holds, as lists in input order."""
    futures: list[asyncio.Future[Any]] = [asyncio.ensure_future(aw) for aw in aws]
    if not futures:
        return [], []
    await asyncio.wait(futures, return_when=return_when)
    done = [f for f in futures if f.done()]
    pending = [f for f in futures if not f.done()]
    return done, pending


def as_completed(aws: Iterable[Awaitable[Any]]) -> Iterator[Awaitable[Any]]:
    """Awaitables giving the results of `aws` in completion order (ties in input order)."""
    futures = [asyncio.ensure_future(aw) for aw in aws]
    finished: list[asyncio.Future[Any]] = []
    waiters: list[asyncio.Future[Any]] = []

    def on_done(fut: asyncio.Future[Any]) -> None:
        finished.append(fut)
        if waiters:
            waiter = waiters.pop(0)
            if not waiter.done():
                waiter.set_result(None)

    for fut in futures:
        fut.add_done_callback(on_done)

    async def next_result() -> Any:
        if not finished:
            waiter = asyncio.get_running_loop().create_future()
            waiters.append(waiter)
            await waiter
        return await finished.pop(0)

    # Lazily, so an instance dropped mid-loop leaves no coroutine unawaited.
    return (next_result() for _ in futures)
