"""The wake channel of a served file: Unix datagram sockets beside it, so a commit wakes the other side at once.

A client's commit shows to the serving process only as a changed
`data_version`, and the server's commit to a client likewise: both would
poll. Instead the serving process binds ``server`` in the file's wake
directory (``<file>-wake/``, like ``-wal``; under the temp directory when
that path is too long for a socket address), and each waiting client binds
a socket of its own there. A client sends one datagram after queueing a
command (``c``: the applier looks now) or before waiting on a run (``r``:
wake me); the server remembers the sender for `LISTEN_TTL` seconds and
sends every remembered client one byte after each commit it makes. A
client re-sends while it waits, so a server started later learns of it.

Why datagram sockets, not a FIFO or inotify: one socket carries wakes from
many clients to the server and back without a file per pair, a send to a
gone peer fails at once (ECONNREFUSED: the client polls, the server forgets
it) instead of blocking or filling a pipe, and it is the same on Linux and
macOS (inotify is Linux-only and wakes on every page the WAL writes, the
server's own commits included). The wakes are only hints: `data_version`
and the rows stay the judge, and without the channel (another OS, a
directory that cannot be made, a server gone) both sides poll as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

# The longest socket path every platform takes (sun_path is 104 on macOS).
MAX_SOCKET_PATH = 100
# How long the server keeps waking a client that has not said "r" or "c" again.
LISTEN_TTL = 5.0
SERVER_NAME = "server"
COMMAND = b"c"
READER = b"r"


def wake_dir(db_path: str) -> Path | None:
    """The wake directory of a database file; None for an in-memory database or off Unix."""
    if not hasattr(socket, "AF_UNIX") or db_path in ("", ":memory:"):
        return None
    real = os.path.realpath(db_path)
    beside = Path(f"{real}-wake")
    if len(str(beside)) + 30 <= MAX_SOCKET_PATH:
        return beside
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"harvest-wake-{os.getuid()}" / digest


def _bound(sock: socket.socket, path: Path) -> bool:
    """Bind `sock` at `path`, making its folder; once more if another side tidied it meanwhile."""
    for _ in range(2):
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            sock.bind(str(path))
        except FileNotFoundError:
            continue  # the folder went between the two calls (`_tidy`)
        except OSError:
            return False
        sock.setblocking(False)
        return True
    return False


class WakeServer:
    """The serving process's end: hears clients, wakes them after each commit."""

    def __init__(self, sock: socket.socket, path: Path) -> None:
        self._sock = sock
        self._path = path
        self.fd = sock.fileno()
        self._clients: dict[str, float] = {}
        # `heard` runs on the serving loop, `committed` on whichever thread commits.
        self._guard = threading.Lock()

    @classmethod
    def open(cls, db_path: str) -> WakeServer | None:
        """Bind the server socket (the writer lock makes this process the only server); None when it cannot."""
        folder = wake_dir(db_path)
        if folder is None:
            return None
        path = folder / SERVER_NAME
        with contextlib.suppress(OSError):
            path.unlink()  # a server that died left it
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if not _bound(sock, path):
            sock.close()
            return None
        _sweep(folder)
        return cls(sock, path)

    def heard(self) -> bool:
        """Read every datagram waiting; True when one of them came with a command."""
        command = False
        now = time.monotonic()
        while True:
            try:
                data, sender = self._sock.recvfrom(16)
            except (BlockingIOError, InterruptedError):
                return command
            except OSError:
                return command
            if sender:
                with self._guard:
                    self._clients[str(sender)] = now + LISTEN_TTL
            command = command or data == COMMAND

    def committed(self) -> None:
        """Wake every client heard lately (called after each commit of this process)."""
        clients = self._clients
        if not clients:
            return
        now = time.monotonic()
        with self._guard:
            for address, until in list(clients.items()):
                if until < now:
                    del clients[address]
                    continue
                try:
                    self._sock.sendto(b"!", address)
                except (BlockingIOError, InterruptedError):
                    pass  # its buffer is full: a wake is pending there already
                except OSError:
                    del clients[address]  # gone (refused, unlinked)

    def close(self) -> None:
        """Unbind (safe to call twice)."""
        if self.fd >= 0:
            self.fd = -1
            self._sock.close()
            with contextlib.suppress(OSError):
                self._path.unlink()
            _tidy(self._path.parent)


def _tidy(folder: Path) -> None:
    """Remove the wake folder once nobody's socket is in it (no litter beside the file)."""
    with contextlib.suppress(OSError):
        folder.rmdir()


def _sweep(folder: Path) -> None:
    """Remove client sockets of processes that no longer run."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            name = entry.name
            if not name.startswith("c-"):
                continue
            pid = name.split("-")[1]
            if pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    entry.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class WakeClient:
    """A client's end: tells the server it waits (or queued a command) and hears its wakes."""

    def __init__(self, sock: socket.socket, path: Path, server: Path) -> None:
        self._sock = sock
        self._path = path
        self._server = str(server)
        self.fd = sock.fileno()

    @classmethod
    def open(cls, db_path: str) -> WakeClient | None:
        """Bind this client's socket; None when the channel cannot be made (the client polls)."""
        folder = wake_dir(db_path)
        if folder is None:
            return None
        path = folder / f"c-{os.getpid()}-{os.urandom(4).hex()}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if not _bound(sock, path):
            sock.close()
            return None
        return cls(sock, path, folder / SERVER_NAME)

    def tell(self, what: bytes) -> bool:
        """Send the server `what` (COMMAND or READER); False when no server hears it."""
        if self.fd < 0:
            return False
        try:
            self._sock.sendto(what, self._server)
        except (BlockingIOError, InterruptedError):
            return True  # its buffer is full: it is busy reading, and will
        except OSError:
            return False
        return True

    def drain(self) -> None:
        """Read and drop the wakes waiting."""
        while True:
            try:
                if not self._sock.recv(64):
                    return
            except OSError:
                return

    def close(self) -> None:
        """Unbind (safe to call twice)."""
        if self.fd >= 0:
            self.fd = -1
            self._sock.close()
            with contextlib.suppress(OSError):
                self._path.unlink()
            _tidy(self._path.parent)
