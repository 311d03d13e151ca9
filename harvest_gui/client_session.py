"""Client mode: a file another process serves, acted on through its command queue (`HarvestClient`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from harvest_engine import (
    HarvestClient,
    HarvestError,
    PostgresReader,
    Runtime,
    SqliteRuntime,
)
from harvest_gui.session import Session, register_app
from harvest_gui.target import Target, as_target, codec, open_reader

if TYPE_CHECKING:
    from harvest_engine import SqliteReader

CLIENT = "client"

SERVED_WITHIN = 3.0
"""A beat older than this (seconds) means no process serves the file (the client's own NotServed rule)."""


class ClientSession(Session):
    """Reads through `SqliteReader`; start, signal, cancel, terminate, query and update go to the server.

    The serving process (`await rt.serve()` in another window, app or
    worker) applies each command exactly once and replies; this window
    writes nothing but its command rows. With `--app`, the module's code
    is loaded on a throwaway in-memory runtime, for the forms' workflow
    list and typed inputs and for replays (where a run waits, its stack).
    """

    mode = CLIENT
    client_timeout = "10s"
    """How long a form waits for the server's reply before saying no process serves the file."""

    def __init__(
        self,
        path: Target,
        reader: SqliteReader | PostgresReader,
        client: HarvestClient,
        code: Runtime | None,
    ) -> None:
        super().__init__(path, reader)
        self.client = client
        self._last_beat: float | None = None  # monotonic time of the last beat seen
        self.last_command_id: str | None = (
            None  # the forms' latest command, shown while out
        )
        self.code = code
        if code is not None:
            self.workflows = list(code.registry.workflows.values())

    def load_code(self, spec: str) -> list[str]:
        """Load workflow code for the forms' names and typed inputs, and for replays.

        The serving process runs the runs; this code only fills the forms.

        Raises:
            ImportError, ValueError: the code cannot be loaded (nothing changes).
        """
        code = SqliteRuntime.open_in_memory()
        try:
            register_app(code, spec)
        except BaseException:
            code.close()
            raise
        old, self.code = self.code, code
        if old is not None:
            old.close()
        self.workflows = list(code.registry.workflows.values())
        self.code_module = spec
        return sorted(code.registry.workflows)

    @classmethod
    def open(cls, path: Target, app_module: str | None = None) -> ClientSession:
        """Open `path` as a client of the process that serves it.

        Raises:
            NotAHarvestDatabase: missing, not harvest's, or too old for commands.
            SchemaTooNew: written by a newer harvest.
            ImportError, ValueError: the app module cannot be loaded.
        """
        p = as_target(path)
        reader = open_reader(p)
        client: HarvestClient | None = None
        code: Runtime | None = None
        try:
            client = (
                HarvestClient.connect(p, codec=codec())
                if isinstance(p, str)
                else HarvestClient.open(p, codec=codec())
            )
            if app_module:
                code = SqliteRuntime.open_in_memory()
                register_app(code, app_module)
        except BaseException:
            reader.close()
            if client is not None:
                client.close()
            if code is not None:
                code.close()
            raise
        session = cls(p, reader, client, code)
        session.code_module = app_module or None
        return session

    @property
    def lock_text(self) -> str:
        """Who holds the lock: the serving process, which this window sends commands to."""
        return "lock: held by the serving process; this window sends it commands"

    def serving_text(self) -> str | None:
        """The serving process's heartbeat age: a server gone quiet shows here, not only on a command."""
        if self.closed:
            return None
        try:
            ago = self.client.served_ago()
        except HarvestError as exc:  # the store went away under the window
            return f"not served? the heartbeat cannot be read: {exc}"
        now = time.monotonic()
        if ago is not None:
            self._last_beat = now - ago
        if ago is not None and ago <= SERVED_WITHIN:
            return f"served (beat {ago:.0f}s ago)"
        if self._last_beat is None:  # no process holds the file, none did while open
            return "not served: no serving process has the file open"
        # A stale beat, or the server closed or died (the engine then reads None).
        return f"not served: no beat for {now - self._last_beat:.0f}s"

    @property
    def can_command(self) -> bool:
        """Start, signal, cancel, terminate, query and update go through the server."""
        return not self.closed

    def close(self) -> None:
        """Close the reader, the client's connections and the code runtime (safe twice)."""
        if self.closed:
            return
        super().close()
        self.client.close()
        if self.code is not None:
            self.code.close()
