"""Rules broken on purpose, to show the simulation finds each (bench/RESULTS.md).

Each mutation is a monkeypatch applied only inside `applied(name)`: nothing
in the engine's own code paths knows of it or pays for it.

- ``skip-key-dedup``: a keyed signal no longer checks its key (every
  `send_signal_idempotent` stages, as a plain signal would).
- ``drop-staged-signal``: a decision never sees a staged signal whose token
  ends in 7 (it stays staged, never delivered: lost).
- ``apply-twice``: the serving side applies a signal command twice.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from harvest_engine.runtime.serving import commands
from harvest_engine.runtime.talking import talk
from harvest_engine.store.sqlite import write_txn_signals

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


def _skip_key_dedup() -> tuple[Any, str, Callable[..., Any]]:
    def send(engine: Any, exec_id: Any, name: str, payload: Any, key: Any) -> bool:
        talk.send_signal(engine, exec_id, name, payload)
        return True

    return talk, "send_signal_idempotent", send


def _drop_staged_signal() -> tuple[Any, str, Callable[..., Any]]:
    real = write_txn_signals.SignalsAndTimers.staged_signals

    def staged(
        self: Any, exec_id: str, limit: int, max_bytes: int | None = None
    ) -> Any:
        return [
            s
            for s in real(self, exec_id, limit, max_bytes)
            if not re.search(r"c\d+-\d*7\b", str(s.payload))
        ]

    return write_txn_signals.SignalsAndTimers, "staged_signals", staged


def _apply_twice() -> tuple[Any, str, Callable[..., Any]]:
    real = commands.run

    def run(engine: Any, record: Any) -> Any:
        if record.KIND == "send_signal":
            real(engine, record)
        return real(engine, record)

    return commands, "run", run


MUTATIONS: dict[str, Callable[[], tuple[Any, str, Callable[..., Any]]]] = {
    "skip-key-dedup": _skip_key_dedup,
    "drop-staged-signal": _drop_staged_signal,
    "apply-twice": _apply_twice,
}


@contextmanager
def applied(name: str | None) -> Iterator[None]:
    """Apply mutation `name` for the block (None: nothing)."""
    if name is None:
        yield
        return
    owner, attr, replacement = MUTATIONS[name]()
    real = getattr(owner, attr)
    setattr(owner, attr, replacement)
    try:
        yield
    finally:
        setattr(owner, attr, real)
