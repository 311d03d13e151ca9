"""The single-writer lock (guide §11): refused opens, in this process and in others.

The in-memory owner row is tested at the store level (`SqliteStore.open_memory`
takes a shared URI); `SqliteRuntime.open_in_memory` opens private databases only.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harvest_engine import DatabaseLocked, SqliteRuntime
from harvest_engine.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Iterator

    from conftest import Workers

LOCKED_EXIT = 3  # workers/lock_probe.py


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database file that exists (created and closed cleanly)."""
    path = tmp_path / "workflows.db"
    SqliteRuntime.open(path).close()
    return path


def lock_path(db: Path) -> Path:
    """Where the lock of `db` lives."""
    return db.with_name(db.name + ".lock")


def hold_in_another_process(workers: Workers, db: Path) -> subprocess.Popen[str]:
    """A holder process with `db` open, once it has the lock."""
    marker = db.with_name("holder-ready")
    holder = workers.spawn("lock_holder", db, marker)
    workers.wait_for(marker.exists, "the holder to open the file", holder)
    return holder


def probe(workers: Workers, db: Path) -> tuple[int, dict[str, object]]:
    """Open `db` once in a fresh process; its exit code and report."""
    done = workers.run("lock_probe", db)
    assert done.returncode in (0, LOCKED_EXIT), done.stderr
    return done.returncode, json.loads(done.stdout)


@contextmanager
def raw_flock(db: Path) -> Iterator[None]:
    """Hold the lock file's flock directly, as a holder that has not touched the db yet."""
    fd = os.open(lock_path(db), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of the folder with its bytes (the lock file included)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# -- in one process ----------------------------------------------------------------


def test_a_second_open_in_the_same_process_is_refused(db: Path) -> None:
    with SqliteRuntime.open(db):
        with pytest.raises(DatabaseLocked) as caught:
            SqliteRuntime.open(db)
        assert caught.value.lock_path == str(lock_path(db))  # type: ignore[attr-defined]
        assert str(db) in str(caught.value)


@pytest.mark.parametrize("alias", ["symlink", "relative", "dotted"])
def test_another_path_to_the_same_file_maps_to_the_same_lock(
    db: Path, alias: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if alias == "symlink":
        other: Path = db.with_name("link.db")
        other.symlink_to(db)
    elif alias == "relative":
        monkeypatch.chdir(db.parent)
        other = Path(db.name)
    else:
        (db.parent / "sub").mkdir()
        other = db.parent / "sub" / ".." / db.name
    with SqliteRuntime.open(db), pytest.raises(DatabaseLocked):
        SqliteRuntime.open(other)
    with SqliteRuntime.open(other), pytest.raises(DatabaseLocked):
        SqliteRuntime.open(db)


def test_a_hard_link_is_a_second_path_with_its_own_lock_as_the_guide_warns(
    db: Path,
) -> None:
    # Guide §11: "A hard link or a bind mount gives a second path, and so a
    # second lock. Open the database through one path."
    link = db.with_name("hard.db")
    os.link(db, link)
    with SqliteRuntime.open(db), SqliteRuntime.open(link):
        assert lock_path(link).exists()
        assert lock_path(link) != lock_path(db)


def test_a_closed_runtime_frees_the_lock_at_once(db: Path) -> None:
    SqliteRuntime.open(db).close()
    with SqliteRuntime.open(db):
        pass


def test_an_open_waits_briefly_for_a_lock_being_released(db: Path) -> None:
    # Guide §11: the open retries for about 100 ms, for a just-dropped holder.
    fd = os.open(lock_path(db), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    released = threading.Event()

    def release() -> None:
        os.close(fd)
        released.set()

    timer = threading.Timer(0.02, release)
    timer.start()
    try:
        with SqliteRuntime.open(db):
            assert released.is_set()
    finally:
        timer.join()


def test_a_refused_open_gives_up_after_about_a_tenth_of_a_second(db: Path) -> None:
    with raw_flock(db):
        started = time.monotonic()
        with pytest.raises(DatabaseLocked):
            SqliteRuntime.open(db)
        waited = time.monotonic() - started
    assert 0.08 <= waited < 5.0


# -- across processes --------------------------------------------------------------


def test_an_open_in_another_process_is_refused_while_this_one_holds_the_file(
    workers: Workers, db: Path
) -> None:
    with SqliteRuntime.open(db):
        code, report = probe(workers, db)
    assert code == LOCKED_EXIT
    assert report["locked"] is True
    assert report["lock_path"] == str(lock_path(db))


def test_an_open_here_is_refused_while_another_process_holds_the_file(
    workers: Workers, db: Path
) -> None:
    holder = hold_in_another_process(workers, db)
    with pytest.raises(DatabaseLocked):
        SqliteRuntime.open(db)
    assert holder.poll() is None


def test_the_lock_is_free_as_soon_as_the_holder_is_sigkilled(
    workers: Workers, db: Path
) -> None:
    holder = hold_in_another_process(workers, db)
    assert probe(workers, db)[0] == LOCKED_EXIT

    workers.sigkill(holder)

    with SqliteRuntime.open(db):  # no stale lock: the kernel freed it with the process
        pass
    code, report = probe(workers, db)
    assert code == 0
    assert report["locked"] is False


# -- a refused open changes nothing ------------------------------------------------


def test_a_refused_open_changes_nothing_in_a_closed_file(db: Path) -> None:
    lock_path(db).touch()
    before = snapshot(db.parent)
    assert not db.with_name(db.name + "-wal").exists()
    with raw_flock(db), pytest.raises(DatabaseLocked):
        SqliteRuntime.open(db)
    assert snapshot(db.parent) == before  # same bytes; no -wal or -shm created


def test_a_refused_open_of_a_missing_file_creates_no_database(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    with raw_flock(db), pytest.raises(DatabaseLocked):
        SqliteRuntime.open(db)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["never.db.lock"]


def test_a_refused_open_changes_nothing_beside_a_live_holder(
    workers: Workers, db: Path
) -> None:
    hold_in_another_process(workers, db)
    before = snapshot(db.parent)
    with pytest.raises(DatabaseLocked):
        SqliteRuntime.open(db)
    assert probe(workers, db)[0] == LOCKED_EXIT
    assert snapshot(db.parent) == before


# -- the lock file's mode ----------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common umask, set explicitly so the mode tests mean the same everywhere."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    """The permission bits of a file."""
    return path.stat().st_mode & 0o777


@pytest.mark.usefixtures("umask_022")
def test_a_new_databases_lock_file_has_the_database_files_mode(tmp_path: Path) -> None:
    db = tmp_path / "fresh.db"
    SqliteRuntime.open(db).close()
    assert mode(lock_path(db)) == mode(db) & 0o666


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("bits", [0o600, 0o640, 0o644, 0o660, 0o664], ids=oct)
def test_the_lock_file_takes_an_existing_databases_read_and_write_bits(
    tmp_path: Path, bits: int
) -> None:
    db = tmp_path / "existing.db"
    SqliteRuntime.open(db).close()
    lock_path(db).unlink()  # the lock file is made on the first open after this
    os.chmod(db, bits)
    SqliteRuntime.open(db).close()
    assert oct(mode(lock_path(db))) == oct(bits)


# -- in-memory databases: the owner row (store level, see the module docstring) ----


SHARED_URIS = [
    pytest.param(
        "file:harvest-e2e-{n}?mode=memory&cache=shared",
        "file:harvest-e2e-{n}?cache=shared&mode=memory",
        id="cache-shared",
    ),
    pytest.param(
        "file:/harvest-e2e-{n}?vfs=memdb", "file:/harvest-e2e-{n}?vfs=memdb", id="memdb"
    ),
]


@pytest.mark.parametrize(("uri", "alias"), SHARED_URIS)
def test_two_writers_on_one_shared_in_memory_database_conflict(
    uri: str, alias: str, request: pytest.FixtureRequest
) -> None:
    name = request.node.name.replace("[", "-").rstrip("]")
    uri, alias = uri.format(n=name), alias.format(n=name)
    # A bystander connection keeps the shared database alive between writers,
    # so the last open below proves the owner row left with the first writer.
    bystander = sqlite3.connect(uri, uri=True)
    try:
        first = SqliteStore.open_memory(uri)
        try:
            with pytest.raises(DatabaseLocked):
                SqliteStore.open_memory(alias)
            with pytest.raises(
                DatabaseLocked
            ):  # the refused open left the owner row alone
                SqliteStore.open_memory(uri)
        finally:
            first.close()
        assert bystander.execute(
            "SELECT count(*) FROM harvest_memory_writer_lock"
        ).fetchone() == (0,)
        SqliteStore.open_memory(alias).close()
    finally:
        bystander.close()


@pytest.mark.parametrize(
    "uri",
    [
        "{dir}/plain.db",
        "file:{dir}/plain.db",
        "file:{dir}/plain.db?cache=shared",
        "file:{dir}/held.db",
    ],
)
def test_an_in_memory_open_refuses_a_uri_that_names_a_file_so_the_flock_cannot_be_skipped(
    uri: str, tmp_path: Path
) -> None:
    held = tmp_path / "held.db"
    SqliteRuntime.open(held).close()
    before = sorted(p.name for p in tmp_path.iterdir())
    with SqliteRuntime.open(held), pytest.raises(ValueError, match="in-memory URI"):
        SqliteRuntime.open_in_memory(uri=uri.format(dir=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_private_in_memory_databases_never_conflict() -> None:
    with SqliteRuntime.open_in_memory(), SqliteRuntime.open_in_memory():
        pass
    first, second = SqliteStore.open_memory(), SqliteStore.open_memory()
    first.close()
    second.close()


def test_a_refused_open_names_the_holding_process(tmp_path: Path) -> None:
    import os

    from harvest_engine import DatabaseLocked, SqliteRuntime

    db = tmp_path / "held.db"
    with SqliteRuntime.open(db), pytest.raises(DatabaseLocked) as caught:
        SqliteRuntime.open(db)
    assert caught.value.holder_pid == os.getpid()  # type: ignore[attr-defined]
    assert f"process {os.getpid()}" in str(caught.value)
