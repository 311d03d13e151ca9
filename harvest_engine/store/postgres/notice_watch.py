"""A serving loop's commit watch on Postgres: a pipe the LISTEN thread pokes at each notice.

Without a watch the serving loop reads `data_version` every poll tick (one
round trip, and the command applier woken by the worker's own commits,
which move the server's snapshot too). The listener (notify.Listener)
already hears every other worker's commit and every client's command: it
pokes the watch then, and after reconnecting (notices sent meanwhile are
lost), so the loop reads `data_version` when told and every
WATCH_SAFETY_POLL seconds besides, as it does with SQLite's file watch.
"""

from __future__ import annotations

import os
from contextlib import suppress


class NoticeWatch:
    """A `CommitWatcher`: readable once a notice of another process arrived."""

    def __init__(self) -> None:
        self.fd, self._write = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._write, False)
        self.closed = False

    def poke(self) -> None:
        """Make the descriptor readable (from the listener's thread)."""
        with suppress(OSError):  # full (already readable) or closed meanwhile
            os.write(self._write, b"!")

    def drain(self) -> None:
        """Read and drop the pokes."""
        with suppress(OSError):
            while os.read(self.fd, 4096):
                pass

    def close(self) -> None:
        """Stop watching (the listener drops a closed watch)."""
        if self.closed:
            return
        self.closed = True
        for fd in (self.fd, self._write):
            with suppress(OSError):
                os.close(fd)
