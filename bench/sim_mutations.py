"""Rules broken on purpose, to show the simulation finds each (bench/RESULTS.md).

Each mutation is a monkeypatch applied only inside `applied(name)`: nothing
in the engine's own code paths knows of it or pays for it.

- ``skip-key-dedup``: a keyed signal no longer checks its key (every
  `send_signal_idempotent` stages, as a plain signal would).
- ``drop-staged-signal``: a decision never sees a staged signal whose token
  ends in 7 (it stays staged, never delivered: lost).
- ``apply-twice``: the serving side applies a signal command twice.
- ``admit-past-concurrency``: a queue's admission counts one free slot
  more than its concurrency leaves.
- ``ignore-queue-rate``: a queue's admission takes no rate token.
- ``decide-while-paused``: a decision reads a paused run as not paused
  (the pause stays stored).
- ``skip-enqueue-dedup``: a start into a queue no longer looks for the
  dedup id's live run.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harvest_engine.runtime.deciding import decide
from harvest_engine.runtime.flow import admission
from harvest_engine.runtime.serving import command_calls
from harvest_engine.runtime.talking import talk
from harvest_engine.store.sql.flow import FlowTables
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
    real = command_calls.run

    def run(engine: Any, record: Any) -> Any:
        if record.KIND == "send_signal":
            real(engine, record)
        return real(engine, record)

    return command_calls, "run", run


def _admit_past_concurrency() -> tuple[Any, str, Callable[..., Any]]:
    real = admission.Limiter.for_runs.__func__  # type: ignore[attr-defined]

    def for_runs(cls: Any, tables: Any, row: Any, now: Any) -> Any:
        limiter = real(cls, tables, row, now)
        limiter.free += 1
        return limiter

    return admission.Limiter, "for_runs", classmethod(for_runs)


def _ignore_queue_rate() -> tuple[Any, str, Callable[..., Any]]:
    real = admission.Limiter.for_runs.__func__  # type: ignore[attr-defined]

    def for_runs(cls: Any, tables: Any, row: Any, now: Any) -> Any:
        limiter = real(cls, tables, row, now)
        limiter.interval = None
        return limiter

    return admission.Limiter, "for_runs", classmethod(for_runs)


def _skip_enqueue_dedup() -> tuple[Any, str, Callable[..., Any]]:
    def holder(self: Any, queue: str, dedup_id: str) -> None:
        return None

    return FlowTables, "dedup_holder", holder


class _Unpaused:
    """A write transaction whose execution rows read as not paused."""

    def __init__(self, txn: Any) -> None:
        self._txn = txn

    def execution(self, exec_id: str) -> Any:
        row = self._txn.execution(exec_id)
        return None if row is None else replace(row, pause_reason=None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._txn, name)


def _decide_while_paused() -> tuple[Any, str, Callable[..., Any]]:
    real = decide.Decider._cycle  # noqa: SLF001

    def cycle(self: Any, txn: Any, *args: Any, **kwargs: Any) -> Any:
        return real(self, _Unpaused(txn), *args, **kwargs)

    return decide.Decider, "_cycle", cycle


MUTATIONS: dict[str, Callable[[], tuple[Any, str, Callable[..., Any]]]] = {
    "skip-key-dedup": _skip_key_dedup,
    "drop-staged-signal": _drop_staged_signal,
    "apply-twice": _apply_twice,
    "admit-past-concurrency": _admit_past_concurrency,
    "ignore-queue-rate": _ignore_queue_rate,
    "decide-while-paused": _decide_while_paused,
    "skip-enqueue-dedup": _skip_enqueue_dedup,
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
