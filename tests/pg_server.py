"""A throwaway PostgreSQL server for the tests: initdb into a temp folder, a Unix socket.

`make test` needs no server set up by hand. Debian's `postgresql` package
(installed by `make system-deps`) puts its binaries under
/usr/lib/postgresql/<version>/bin; this module runs `initdb` and `pg_ctl` from
there. `initdb` refuses to run as root (CI and these machines are root), so
under root the server runs as an unprivileged system user (`postgres`, which
the Debian package creates, else `nobody`) owning the temp folder.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

# The server needs nothing durable: every database is thrown away.
_SERVER_OPTIONS = (
    "-c listen_addresses='' -c fsync=off -c synchronous_commit=off "
    "-c full_page_writes=off -c shared_buffers=16MB -c max_connections=200"
)
SUPERUSER = "harvest"
PREFIX = "harvest-pg-"
OWNER = "owner.pid"
"""The file in a server's folder naming the process that started it."""
UNOWNED_GRACE = 600.0
"""Seconds a folder with no owner file is left alone (it may be starting)."""


def postgres_bin() -> Path | None:
    """The newest installed server's bin folder, or None when PostgreSQL is missing."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: (
            int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _server_user() -> str | None:
    """Who runs the server: None for this user, or a system user when we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and neither 'postgres' nor 'nobody' exists")


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not reaped yet, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        pass
    with contextlib.suppress(OSError):
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    return True


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _abandoned(root: Path) -> bool:
    """Whether the process that started the server in `root` is gone.

    A folder from before owner files (or one caught between its creation
    and its owner file) counts once it is old and no postmaster runs in it.
    """
    owner = _read_pid(root / OWNER)
    if owner is not None:
        return not _alive(owner)
    try:
        age = time.time() - root.stat().st_mtime
    except OSError:
        return False
    postmaster = _read_pid(root / "data" / "postmaster.pid")
    return age > UNOWNED_GRACE and (postmaster is None or not _alive(postmaster))


def sweep_abandoned(bindir: Path, where: Path | None = None) -> list[Path]:
    """Stop and remove the servers of test runs that were killed; the folders removed.

    `stop()` runs at a clean exit only: a SIGKILLed or interrupted run left
    its server running and its folder (~150 MB) behind, one more each time.
    """
    removed = []
    for root in Path(where or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if not root.is_dir() or not _abandoned(root):
            continue
        data = root / "data"
        postmaster = _read_pid(data / "postmaster.pid")
        if postmaster is not None and _alive(postmaster):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                _as_server_user(
                    [
                        str(bindir / "pg_ctl"),
                        "stop",
                        "-m",
                        "immediate",
                        "-D",
                        str(data),
                    ],
                    root,
                )
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed


def _as_server_user(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    user = _server_user()
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    return subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=cwd, timeout=60
    )


class PostgresServer:
    """One server on a Unix socket in its own temp folder; `stop()` removes it all."""

    def __init__(self, bindir: Path, options: str = _SERVER_OPTIONS) -> None:
        """Start it; `options` are the server's ``-c`` settings (the tests' skip fsync)."""
        self._bin = bindir
        self._user = _server_user()
        sweep_abandoned(bindir)
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX))
        (self.root / OWNER).write_text(str(os.getpid()))
        self.data = self.root / "data"
        self.socket_dir = self.root
        self._names = itertools.count(1)
        self._recycled: list[str] = []
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        os.chmod(self.root, 0o755)  # the tests' own user reaches the socket
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )
        self._options = options
        self.start()

    def start(self) -> None:
        """Start the server on its folder and socket (again, after `halt`)."""
        self._run(
            "pg_ctl",
            "start",
            "-w",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            f"{self._options} -k {self.socket_dir}",
        )

    def halt(self, mode: str = "fast") -> None:
        """Stop the server but keep its folder, so `start` brings the same databases back.

        `fast` ends every connection and shuts down cleanly; `immediate` is a
        crash (the server recovers from its WAL on `start`).
        """
        self._run("pg_ctl", "stop", "-w", "-m", mode, "-D", str(self.data))

    def _run(self, tool: str, *args: str) -> None:
        result = _as_server_user([str(self._bin / tool), *args], self.root)
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{tool} failed ({result.returncode}): {result.stderr}{result.stdout}{tail}"
            )

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq URL for `dbname` over this server's socket."""
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.socket_dir}"

    def create_database(self) -> str:
        """A fresh empty database; its DSN."""
        name = f"t{next(self._names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} STRATEGY FILE_COPY")
        return self.dsn(name)

    def fresh_database(self) -> str:
        """An empty harvest database: a recycled one when there is one, else a new one.

        `CREATE DATABASE` costs ~0.2 s; emptying a used one costs a few ms, so
        the runtime fixture recycles (the schema stays, every row goes).
        """
        if self._recycled:
            return self._recycled.pop()
        return self.create_database()

    def recycle_database(self, dsn: str) -> None:
        """Empty a database the test is done with and keep it for the next test."""
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid != pg_backend_pid()"
                )
                tables = [
                    row[0]
                    for row in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                        "AND tablename LIKE 'harvest%%' AND tablename != "
                        "'harvest_schema_version'"
                    ).fetchall()
                ]
                sequences = [
                    row[0]
                    for row in conn.execute(
                        "SELECT sequencename FROM pg_sequences "
                        "WHERE schemaname = 'public'"
                    ).fetchall()
                ]
                # DELETE, not TRUNCATE: a test's few rows go faster than new files.
                conn.execute(
                    "".join(f"DELETE FROM {t};" for t in tables)
                    + "".join(f"SELECT setval('{q}', 1, false);" for q in sequences)
                )
        except psycopg.Error:
            self.drop_database(dsn)
            return
        self._recycled.append(dsn)

    def drop_database(self, dsn: str) -> None:
        """Drop a database made by `create_database` (its connections are ended)."""
        name = conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Stop the server at once and remove its folder."""
        try:
            if (self.data / "postmaster.pid").exists():  # not halted already
                self._run("pg_ctl", "stop", "-m", "immediate", "-D", str(self.data))
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
