"""PostgresRuntime: the same runtime on a Postgres database that many workers share.

A composition root like `sqlite_runtime.py`: it names the Postgres store and
shares every line of `Runtime` (which speaks only the DurableStore protocol).
psycopg is imported on `connect`, so `import harvest_engine` works without
the `postgres` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.durations import Duration, to_timedelta
from harvest_engine.errors import Unsupported
from harvest_engine.runtime.runtime import Runtime

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvest_engine.clock import Clock
    from harvest_engine.codecs import PayloadCodec
    from harvest_engine.interceptors import Interceptor
    from harvest_engine.store.postgres.store import PostgresStore

INSTALL_HINT = "psycopg is not installed: pip install 'harvest[postgres]'"

PEERS_HEARD_WITHIN = 3.0
"""Seconds since another worker's last commit (each beats every second) that it counts as serving."""


def open_store(
    dsn: str,
    *,
    worker_id: str | None,
    lease: Duration | None,
    codec: PayloadCodec | None = None,
) -> PostgresStore:
    """Connect a PostgresStore, or say which extra to install."""
    try:
        from harvest_engine.store.postgres import leases  # noqa: PLC0415
        from harvest_engine.store.postgres.store import (  # noqa: PLC0415
            PostgresStore,
        )
    except ImportError as exc:
        raise Unsupported(feature="Postgres", why=INSTALL_HINT) from exc
    span = leases.DEFAULT_LEASE if lease is None else to_timedelta(lease, what="lease")
    if span.total_seconds() <= 0:
        raise ValueError(f"lease must be positive, got {lease!r}")
    return PostgresStore.connect(dsn, worker_id=worker_id, lease=span, codec=codec)


class PostgresRuntime(Runtime):
    """The workflow runtime on PostgreSQL: any number of them, in any processes, on one database.

    Each is one worker (`worker_id`). Decisions lock their run's row, and a
    run another worker is deciding is skipped, not waited for; activity
    claims are leases renewed while the body runs, so a dead worker's task
    is retaken by a live one after `lease` (at-least-once, the same
    idempotency key). Everything but connecting is `Runtime`'s surface.
    """

    @classmethod
    def connect(
        cls,
        dsn: str,
        *,
        worker_id: str | None = None,
        clock: Clock | None = None,
        lease: Duration | None = None,
        interceptors: Iterable[Interceptor] = (),
        codec: PayloadCodec | None = None,
    ) -> PostgresRuntime:
        """Connect to a database (created schema on first use); one worker of many.

        Args:
            dsn: a libpq connection string or ``postgresql://`` URL.
            worker_id: this worker's name in leases (default: host, pid and a
                random part). Reusing a crashed worker's id frees its tasks at once.
            clock: the clock of decisions (leases use the server's clock).
            lease: how long a claimed task stays this worker's without
                renewal (default 30s; renewed three times per lease).
            interceptors: hooks around this worker's calls
                (harvest_engine.interceptors).
            codec: encodes payloads at rest (README "Payload codecs").

        Raises:
            NotAHarvestDatabase: a wrong DSN, an unreachable server or a
                missing database (the DSN named, its password hidden).
            SchemaTooNew: a newer harvest wrote the schema; nothing is changed.
            CodecRequired: the database's payloads are encoded and `codec` is
                not their codec.
            Unsupported: psycopg (the `postgres` extra) is not installed.
        """
        store = open_store(dsn, worker_id=worker_id, lease=lease, codec=codec)
        rt = cls(store, clock=clock, interceptors=interceptors)
        rt.registry.heartbeat_timeouts = True

        def heard() -> None:  # another worker or a client committed
            rt.waker.wake_all()
            rt.changes.committed()  # in-process readers of events and streams

        from harvest_engine.store.postgres.notify import Peers  # noqa: PLC0415

        # A client's command wakes only the applier (the run loop follows its commit).
        peers = Peers(on_command=rt.waker.wake_commands)
        # With other workers serving, a queue's successors are left to
        # whichever worker claims first (Settings.share_successors).
        rt.settings.share_successors = lambda: peers.recently(PEERS_HEARD_WITHIN)
        try:
            store.listen(heard, peers)  # LISTEN/NOTIFY: at once, not at a poll
        except BaseException:
            rt.close()
            raise
        return rt

    @property
    def worker_id(self) -> str:
        """This worker's id, as its leases record it."""
        return str(getattr(self.store, "worker_id", ""))

    def __enter__(self) -> PostgresRuntime:
        return self
