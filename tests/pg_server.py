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
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

# The server needs nothing durable: every database is thrown away.
_SERVER_OPTIONS = (
    "-c listen_addresses='' -c fsync=off -c synchronous_commit=off "
    "-c full_page_writes=off -c shared_buffers=16MB -c max_connections=200"
)
SUPERUSER = "harvest"


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


class PostgresServer:
    """One server on a Unix socket in its own temp folder; `stop()` removes it all."""

    def __init__(self, bindir: Path, options: str = _SERVER_OPTIONS) -> None:
        """Start it; `options` are the server's ``-c`` settings (the tests' skip fsync)."""
        self._bin = bindir
        self._user = _server_user()
        self.root = Path(tempfile.mkdtemp(prefix="harvest-pg-"))
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
        command = [str(self._bin / tool), *args]
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        result = subprocess.run(
            command, capture_output=True, text=True, check=False, cwd=self.root
        )
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
