"""The translator from Postgres failures to harvest's typed errors.

No psycopg error reaches a caller of the store: a lost connection, a server
that went away, a full disk on the server, a deadlock between workers all
arrive as `StorageError` naming the database (its password hidden), with the
driver's error as ``__cause__``. The runtime stays usable: the store
reconnects on its next call.
"""

from __future__ import annotations

import psycopg

from harvest_engine.errors import DatabaseCorrupt, HarvestError, StorageError
from harvest_engine.store.boundary import Boundary
from harvest_engine.store.rows import UnreadableRow


def translate(exc: BaseException, path: str) -> BaseException:
    """The typed error that stands for `exc` met on the database `path` (or `exc` itself)."""
    if isinstance(exc, UnreadableRow):
        return DatabaseCorrupt(path=path, reason=str(exc))
    if isinstance(exc, HarvestError) or not isinstance(exc, psycopg.Error):
        return exc
    text = str(exc).strip().splitlines()
    reason = text[0] if text else type(exc).__name__
    if isinstance(exc, psycopg.errors.DataCorrupted | psycopg.errors.IndexCorrupted):
        return DatabaseCorrupt(path=path, reason=reason)
    return StorageError(path=path, reason=reason)


BOUNDARY = Boundary((psycopg.Error, UnreadableRow), translate)
"""Postgres's boundary; `guard_public_methods` is its class decorator."""
guard_public_methods = BOUNDARY.guard_public_methods
