"""The single-writer lock: an exclusive flock on `<database>.lock`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from harvest_engine.errors import DatabaseLocked, NotAHarvestDatabase, StorageError

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
            NotAHarvestDatabase: the path is a folder.
            StorageError: the folder the file would live in does not exist,
                or the lock file cannot be made.
            DatabaseLocked: another runtime holds the lock.
        """
        canonical = canonical_database_path(db_path)
        self.db_path = canonical
        self.lock_path = canonical.with_name(canonical.name + ".lock")
        self.created = False
        self._fd = -1
        deadline = time.monotonic() + LOCK_RETRY_SECONDS
        while True:
            if self._fd < 0:
                self._fd, self.created = _open_lock_file(self.lock_path, canonical)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _holder_pid(self._fd)
                    self._close()
                    raise DatabaseLocked(
                        path=str(canonical),
                        lock_path=str(self.lock_path),
                        holder_pid=holder,
                    ) from None
                time.sleep(0.01)
                continue
            if not _still_linked(self._fd, self.lock_path):
                # A failed open removed the file while we waited for it: its
                # flock guards nothing now, so lock the file at the path.
                self._close()
                continue
            try:
                # Name the holder for whoever is refused next (a GUI, an operator).
                os.ftruncate(self._fd, 0)
                os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)
            except OSError:
                self.release(remove=True)
                raise
            return

    def beat(self) -> None:
        """Set the lock file's mtime to now: the serving process's heartbeat (`served_ago`)."""
        os.utime(self._fd)

    def release(self, *, remove: bool = False) -> None:
        """Free the lock; the file stays on disk, unless `remove` and this open created it.

        A failed open removes the lock file it created (while still holding
        the flock, so a waiter sees the file gone and locks a fresh one).
        """
        if self._fd >= 0:
            if remove and self.created:
                with contextlib.suppress(OSError):
                    self.lock_path.unlink()
            self._close()

    def _close(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = -1


def canonical_database_path(db_path: str | Path) -> Path:
    """The real path of a database file to open, refused before any file is made."""
    if not str(os.fspath(db_path)).strip():
        raise ValueError("a database path is needed (got an empty one)")
    canonical = Path(os.path.realpath(db_path))
    if canonical.is_dir():
        raise NotAHarvestDatabase(
            path=str(canonical), reason="it is a folder, not a database file"
        )
    if not canonical.parent.is_dir():
        raise StorageError(
            path=str(canonical),
            reason=f"the folder {canonical.parent} does not exist (for {canonical.name})",
        )
    return canonical


def _open_lock_file(lock_path: Path, db_path: Path) -> tuple[int, bool]:
    """The lock file's descriptor, and whether this call created the file.

    The lock file takes the database's read/write bits, so only the users
    who reach the data can hold it. `os.open` applies the umask,
    so for an existing database the bits are set with fchmod on a file we
    own. For a new database, SQLite creates it 0644 less the umask, which is
    what `os.open` gives the lock file too.
    """
    mode = db_path.stat().st_mode & 0o666 if db_path.exists() else None
    created = True
    try:
        fd = os.open(
            lock_path,
            os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
            0o644 if mode is None else mode,
        )
    except FileExistsError:
        fd = os.open(lock_path, os.O_RDWR | os.O_CLOEXEC)
        created = False
    info = os.fstat(fd)
    if (
        mode is not None
        and info.st_uid == os.geteuid()
        and info.st_mode & 0o666 != mode
    ):
        os.fchmod(fd, mode)
    return fd, created


def _still_linked(fd: int, lock_path: Path) -> bool:
    """Whether the locked descriptor is still the file at `lock_path`."""
    try:
        at_path = os.stat(lock_path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (at_path.st_dev, at_path.st_ino) == (mine.st_dev, mine.st_ino)


def _holder_pid(fd: int) -> int | None:
    """The pid the holder wrote into the lock file, if readable."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def served_ago(db_path: str | Path) -> float | None:
    """Seconds since a serving process last beat on the file's lock; None when none holds it.

    A lock file no process holds (its runtime closed, or killed: the kernel
    freed the flock) counts as never served, at once. Probing takes the
    flock for an instant only when it is free, without waiting.
    """
    canonical = canonical_database_path(db_path)
    lock_path = canonical.with_name(canonical.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return max(0.0, time.time() - os.fstat(fd).st_mtime)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
