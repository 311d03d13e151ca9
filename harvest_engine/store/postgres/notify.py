"""LISTEN/NOTIFY: a worker's commits wake the other serving workers at once, not at the next poll.

Every write transaction of a store ends with ``pg_notify('harvest_wake',
worker_id)`` (delivered at commit, dropped on rollback), and a client's
queued command notifies too, naming its row and the run it signals
(``command:<id>:<run>``), so the applier claims it without reading the
queue. A serving worker listens on its own connection in a daemon thread
and wakes its loop for every notice but its own.

Attempt cancels travel on ``harvest_cancel``: the transaction that cancels
claimed attempts notifies their (exec id, activity id, attempt) keys, and every
worker's listener hands them to the store's cancel listeners, so the one
running a body stops it within a notice's latency (`runtime/attempts.py`).

Clients hear two more channels (client_notices.py): the transaction that
writes a command's reply notifies ``harvest_reply`` with the command id,
the one that seals a run notifies ``harvest_done`` with the run's id, and
one that writes a run's events or streams ``harvest_progress`` with its id.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from harvest_engine.store.postgres.connection import connect, reconnect
from harvest_engine.store.postgres.notice_watch import NoticeWatch
from harvest_engine.store.rows import AttemptKey, CommandHint
from harvest_engine.store.sql.commands import POSTGRES_COMMANDS

log = logging.getLogger("harvest_engine.postgres")

CHANNEL = "harvest_wake"
NOTIFY = "SELECT pg_notify('harvest_wake', %s)"
REPLY_CHANNEL = "harvest_reply"
DONE_CHANNEL = "harvest_done"
CANCEL_CHANNEL = "harvest_cancel"
NOTIFY_CANCEL = f"SELECT pg_notify('{CANCEL_CHANNEL}', %s)"
# Bytes of attempts per cancel notice (a NOTIFY payload holds under 8000 bytes).
CANCEL_CHUNK_BYTES = 6000
# The reason a cancel notice carries is cut to this many characters.
CANCEL_REASON_CHARS = 200
PROGRESS_CHANNEL = "harvest_progress"
NOTIFY_PROGRESS = f"SELECT pg_notify('{PROGRESS_CHANNEL}', %s)"
"""Sent (at commit) by a transaction that wrote a run's events, stream or details,
with the run's id: a client reading them re-reads at once."""

# A reply notice carries the reply itself when it fits a NOTIFY payload
# (under 8000 bytes): the client then reads nothing after its wake.
REPLY_NOTICE_BYTES = 7600

FINISH_COMMAND = (
    "WITH done AS ("
    + POSTGRES_COMMANDS.finish_sql
    + f" RETURNING command_id, reply) SELECT pg_notify('{REPLY_CHANNEL}', "
    "length(command_id) || ':' || command_id || CASE WHEN left(reply, 1) = '{' "
    f"AND octet_length(command_id) + octet_length(reply) <= {REPLY_NOTICE_BYTES} "
    "THEN reply ELSE '' END) FROM done"
)
"""Mark a command applied (`Commands.finish_sql`) and notify its waiting client,
which hears it when the transaction commits: `reply_notice` reads the payload
(the command id, length-prefixed, then the reply, or nothing when it is too
long or encoded by a payload codec: the client's codec connection reads it)."""


def reply_notice(payload: str) -> tuple[str, str | None]:
    """(command id, reply JSON or None) of a `FINISH_COMMAND` notice's payload.

    A payload not in that form (an older worker's: the bare id) is the id.
    """
    size, colon, rest = payload.partition(":")
    if not colon or not size.isdigit() or int(size) > len(rest):
        return payload, None
    n = int(size)
    return rest[:n], rest[n:] or None


# How often the listening thread checks that it should stop (seconds).
STOP_CHECK = 0.2
# Waits between reconnects of a listener whose connection broke (seconds).
RECONNECT_BACKOFF = (0.1, 0.5, 1.0, 2.0, 5.0)


def cancel_notices(attempts: list[AttemptKey], reason: str) -> list[str]:
    """The payloads of CANCEL_CHANNEL notices naming these attempts (chunked by size)."""
    why = reason[:CANCEL_REASON_CHARS]
    chunks: list[list[AttemptKey]] = [[]]
    size = 0
    for key in attempts:
        cost = len(json.dumps(key)) + 2
        if chunks[-1] and size + cost > CANCEL_CHUNK_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(key)
        size += cost
    return [json.dumps({"attempts": chunk, "reason": why}) for chunk in chunks if chunk]


def read_cancel_notice(payload: str) -> tuple[list[AttemptKey], str] | None:
    """The attempts and reason of a cancel notice; None for one that is not readable."""
    try:
        data = json.loads(payload)
        attempts = [
            (str(exec_id), int(activity_id), int(attempt))
            for exec_id, activity_id, attempt in data["attempts"]
        ]
        return attempts, str(data.get("reason") or "cancelled")
    except (ValueError, TypeError, KeyError):
        return None


OnCancel = Callable[[list[AttemptKey], str], None]
"""What hears attempt cancels: `fn(attempts, reason)`."""


class CancelListeners:
    """The store's listeners of attempt cancels, called in the order they were added."""

    def __init__(self) -> None:
        self._listeners: list[OnCancel] = []

    def add(self, fn: OnCancel) -> None:
        """Call `fn(attempts, reason)` for every cancel heard."""
        self._listeners.append(fn)

    def __call__(self, attempts: list[AttemptKey], reason: str) -> None:
        """Hand one cancel to every listener."""
        for listener in self._listeners:
            listener(attempts, reason)


class Peers:
    """When this worker last heard another serving worker commit (every one beats each second).

    And what a client's command notice calls instead of the wake, if set
    (`on_command`: the serving worker's applier alone).
    """

    def __init__(self, on_command: OnCommand | None = None) -> None:
        self.heard_at = -math.inf
        self.on_command = on_command

    def recently(self, within: float) -> bool:
        """Whether another worker committed in the last `within` seconds."""
        return time.monotonic() - self.heard_at < within


COMMAND_NOTICE = "command"
"""How a client's notice that it queued a command begins (client_queue.py):
then ":<row id>:<the run it signals, or nothing>" (older clients: nothing)."""

OnCommand = Callable[[CommandHint | None], None]
"""What a client's command notice calls (from the listener's thread)."""


def is_command_notice(payload: str) -> bool:
    """Whether a wake notice is a client's command (not a worker's commit)."""
    return payload == COMMAND_NOTICE or payload.startswith(f"{COMMAND_NOTICE}:")


def read_command_notice(payload: str) -> CommandHint | None:
    """The row and run a command notice names; None when it names none (or is unreadable)."""
    _, _, rest = payload.partition(":")
    row_id, sep, run = rest.partition(":")
    return (int(row_id), run) if sep and row_id.isdigit() else None


class Listener:
    """A daemon thread that calls `on_wake()` for each notice another worker or a client sends.

    A client's command notice calls `on_command()` instead when given: only
    the command applier needs to look (it wakes the run loop itself after
    applying), and a run loop woken beside it would take the worker's
    connection for a pass's reads just when the command's transaction
    wants it. And `on_cancel(attempts, reason)` for each attempt cancel
    any worker announced, its own included.
    """

    def __init__(
        self,
        dsn: str,
        worker_id: str,
        on_wake: Callable[[], None],
        on_cancel: OnCancel | None = None,
        on_command: OnCommand | None = None,
    ) -> None:
        self._dsn = dsn
        self._me = worker_id
        self._on_wake = on_wake
        self._on_command = on_command
        self._on_cancel = on_cancel
        self._stop = threading.Event()
        self._peers: Peers | None = None
        # Serving loops' commit watches, poked at each notice of another process.
        self.watches: list[NoticeWatch] = []
        self._conn = self._listen()
        self._thread = threading.Thread(
            target=self._loop, name="harvest-listener", daemon=True
        )
        self._thread.start()

    def told(self, peers: Peers) -> Listener:
        """Note in `peers` each notice of another worker (a client's command is none).

        A client's command notice calls `peers.on_command` when set.
        """
        self._peers = peers
        if peers.on_command is not None:
            self._on_command = peers.on_command
        return self

    def _listen(self, *, again: bool = False) -> psycopg.Connection[tuple[Any, ...]]:
        conn = reconnect(self._dsn) if again else connect(self._dsn)
        conn.execute(f"LISTEN {CHANNEL}")
        if self._on_cancel is not None:
            conn.execute(f"LISTEN {CANCEL_CHANNEL}")
        return conn

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                for notice in self._conn.notifies(timeout=STOP_CHECK):
                    if notice.channel == CANCEL_CHANNEL:
                        self._cancelled(notice.payload)
                    elif is_command_notice(notice.payload):
                        self._commanded(read_command_notice(notice.payload))
                    elif notice.payload != self._me:
                        if self._peers is not None:
                            self._peers.heard_at = time.monotonic()
                        self._on_wake()
                        self._poke()
                failures = 0
            except psycopg.Error:
                # The server went away: reconnect with backoff; wake once, since
                # notices sent meanwhile are lost (the poll covers them too).
                delay = RECONNECT_BACKOFF[min(failures, len(RECONNECT_BACKOFF) - 1)]
                failures += 1
                if self._stop.wait(delay):
                    return
                try:
                    self._conn = self._listen(again=True)
                    self._on_wake()
                    self._commanded(None)  # lost notices: the applier reads the queue
                    self._poke()
                except Exception as exc:  # noqa: BLE001 - retried with the next backoff
                    log.warning("LISTEN reconnect failed (%s); retrying", exc)

    def _commanded(self, hint: CommandHint | None) -> None:
        """A client queued a command (`hint`: its row and run, if the notice named them).

        The applier alone is woken (`on_command`), which needs no commit
        watch's read to know; without one here, a commit like another's.
        """
        if self._on_command is None:
            self._on_wake()
            self._poke()
        else:
            self._on_command(hint)

    def _poke(self) -> None:
        for watch in list(self.watches):
            if watch.closed:
                self.watches.remove(watch)
            else:
                watch.poke()

    def watch(self) -> NoticeWatch:
        """A commit watch poked at each notice this listener hears from another process."""
        watch = NoticeWatch()
        self.watches.append(watch)
        return watch

    def _cancelled(self, payload: str) -> None:
        read = read_cancel_notice(payload)
        if read is None or self._on_cancel is None:
            log.warning("unreadable attempt cancel notice %r", payload[:200])
            return
        self._on_cancel(*read)

    def stop(self) -> None:
        """Stop listening and close the connection."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._conn.close()
