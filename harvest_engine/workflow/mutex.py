"""Durable mutexes (`ctx.mutex(key)`): the awaitable lock with the guard it grants.

The run queues for the key with MutexRequested and holds it from
MutexGranted, whose `lock_seq` fences work done under the lock, until
MutexReleased.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvest_engine.workflow.machine import Machine


class MutexGuard:
    """A held mutex; `release()` frees it (a plain call)."""

    def __init__(self, machine: Machine, key: str, lock_seq: int) -> None:
        self._machine = machine
        self.key = key
        self.lock_seq = lock_seq
        self.released = False

    def release(self) -> None:
        """Free the key for the next run in its queue (safe to call twice)."""
        if not self.released:
            self.released = True
            self._machine.commands.release_mutex(self.key)


class WorkflowMutex:
    """`ctx.mutex(key)`: `acquire()` queues the run and waits for MutexGranted."""

    def __init__(self, machine: Machine, key: str) -> None:
        self._machine = machine
        self.key = key
        self._guard: MutexGuard | None = None

    async def acquire(self) -> MutexGuard:
        """Wait for the key; the guard carries the fencing `lock_seq`."""
        lock_seq = await self._machine.commands.request_mutex(self.key)
        return MutexGuard(self._machine, self.key, int(lock_seq))

    async def __aenter__(self) -> MutexGuard:
        self._guard = await self.acquire()
        return self._guard

    async def __aexit__(self, *exc: object) -> None:
        if self._guard is not None:
            self._guard.release()
            self._guard = None
