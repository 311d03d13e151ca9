"""Other processes' commits to a database file as inotify events, so a server need not poll.

A commit in WAL mode writes the `-wal` file (and a checkpoint the database
file), so a modify event on either is the earliest sign that `data_version`
may have moved. The events only say "look now"; `data_version` stays the
judge, so a spurious event (our own commit, a checkpoint) costs one cheap
read. Linux only: elsewhere, or when inotify is unavailable, `open_commit_watch`
returns None and the serving loop polls `data_version` as before.
"""

from __future__ import annotations

import ctypes
import os
import sys
from contextlib import suppress

# <sys/inotify.h>
_IN_MODIFY = 0x00000002


class CommitWatch:
    """An inotify descriptor watching one database file and its WAL."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def drain(self) -> None:
        """Read and drop the pending events (the descriptor is non-blocking)."""
        with suppress(BlockingIOError, InterruptedError):
            while os.read(self.fd, 4096):
                pass

    def close(self) -> None:
        """Stop watching (safe to call twice)."""
        if self.fd >= 0:
            with suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def open_commit_watch(db_path: str) -> CommitWatch | None:
    """A watch on `db_path` and `db_path-wal`, or None where inotify cannot serve."""
    if not sys.platform.startswith("linux") or db_path in ("", ":memory:"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
        add_watch = libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    fd = int(init(os.O_NONBLOCK | os.O_CLOEXEC))
    if fd < 0:
        return None
    watched = 0
    for path in (f"{db_path}-wal", db_path):
        if int(add_watch(fd, os.fsencode(path), _IN_MODIFY)) >= 0:
            watched += 1
    if watched == 0:
        os.close(fd)
        return None
    return CommitWatch(fd)
