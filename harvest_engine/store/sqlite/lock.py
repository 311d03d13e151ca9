"""The single-writer lock: an exclusive flock on `<database>.lock` (guide §11)."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from harvest_engine.errors import DatabaseLocked

LOCK_RETRY_SECONDS = 0.1


class WriterLock:
    """Holds the flock for as long as the runtime is open.

    The lock path comes from the canonical database path, so a symlink or a
    relative path maps to the same lock. The kernel frees the lock when the
    holder's process dies, so a restart never meets a stale lock.
    """

    def __init__(self, db_path: str | Path) -> None:
        """Take the lock now, retrying for about 100 ms; raise DatabaseLocked.

        Raises:
            ValueError: an empty path.
            IsADirectoryError: the path is a folder.
            FileNotFoundError: the folder the file would live in does not exist.
            DatabaseLocked: another runtime holds the lock.
        """
        canonical = canonical_database_path(db_path)
        self.db_path = canonical
        self.lock_path = canonical.with_name(canonical.name + ".lock")
        self._fd = _open_lock_file(self.lock_path, canonical)
        deadline = time.monotonic() + LOCK_RETRY_SECONDS
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _holder_pid(self._fd)
                    os.close(self._fd)
                    raise DatabaseLocked(
                        path=str(canonical),
                        lock_path=str(self.lock_path),
                        holder_pid=holder,
                    ) from None
                time.sleep(0.01)
                continue
            # Name the holder for whoever is refused next (a GUI, an operator).
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)
            return

    def release(self) -> None:
        """Free the lock (the file stays on disk, by design)."""
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def canonical_database_path(db_path: str | Path) -> Path:
    """The real path of a database file to open, refused before any file is made."""
    if not str(os.fspath(db_path)).strip():
        raise ValueError("a database path is needed (got an empty one)")
    canonical = Path(os.path.realpath(db_path))
    if canonical.is_dir():
        raise IsADirectoryError(f"{canonical} is a folder, not a database file")
    if not canonical.parent.is_dir():
        raise FileNotFoundError(
            f"the folder {canonical.parent} does not exist (for {canonical.name})"
        )
    return canonical


def _open_lock_file(lock_path: Path, db_path: Path) -> int:
    # The lock file takes the database's read/write bits, so only the users
    # who reach the data can hold it (guide §11). `os.open` applies the
    # umask, so the bits are set explicitly with fchmod on a file we own.
    mode = 0o644
    if db_path.exists():
        mode = db_path.stat().st_mode & 0o666
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except FileExistsError:
        fd = os.open(lock_path, os.O_RDWR | os.O_CLOEXEC)
    if os.fstat(fd).st_uid == os.geteuid() and os.fstat(fd).st_mode & 0o666 != mode:
        os.fchmod(fd, mode)
    return fd


def _holder_pid(fd: int) -> int | None:
    """The pid the holder wrote into the lock file, if readable."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None
