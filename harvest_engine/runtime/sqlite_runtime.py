"""SqliteRuntime: the runtime on one SQLite file (or a private in-memory database); it only opens.

A composition root: it names the SQLite store and opens it; every other call
is `Runtime`'s, which speaks only the DurableStore protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.clock import SystemClock
from harvest_engine.runtime.runtime import Runtime
from harvest_engine.store.sqlite.faults import guard_public_methods
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from harvest_engine.clock import Clock
    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.interceptors import Interceptor


@guard_public_methods()
class SqliteRuntime(Runtime):
    """An embedded workflow runtime on one SQLite file (or a private in-memory database).

    Open it, register the workflow and activity functions, start runs, and
    drive them with the async drivers (everything but opening is `Runtime`'s).
    One runtime at a time writes a file: a second `open` gets DatabaseLocked.
    """

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        clock: Clock | None = None,
        interceptors: Iterable[Interceptor] = (),
        codec: PayloadCodec | None = None,
    ) -> SqliteRuntime:
        """Open (or create) a database file; raise DatabaseLocked if another runtime holds it.

        `interceptors` hook the runtime's calls (harvest_engine.interceptors);
        `codec` encodes payloads at rest (README "Payload codecs"), and a
        file written with one raises CodecRequired when opened without it.
        """
        clock = clock or SystemClock()
        store = SqliteStore.open(path, now=clock.now(), codec=codec)
        return cls(store, clock=clock, interceptors=interceptors)

    @classmethod
    def open_in_memory(
        cls,
        *,
        clock: Clock | None = None,
        uri: str | None = None,
        interceptors: Iterable[Interceptor] = (),
        codec: PayloadCodec | None = None,
    ) -> SqliteRuntime:
        """A fresh, private, empty database that lives as long as the runtime.

        With `uri` (e.g. ``"file:demo?mode=memory&cache=shared"``) several
        connections of this process share one in-memory database; its writer
        lock is an owner row inside it, so a second runtime gets DatabaseLocked.
        """
        store = SqliteStore.open_memory(uri, codec=codec)
        return cls(store, clock=clock, interceptors=interceptors)

    def __enter__(self) -> SqliteRuntime:
        return self
