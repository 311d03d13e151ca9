"""Machine: what WorkflowContext's calls need of a running workflow instance.

Temporal's `_Runtime` idea: the context, its timers, mutexes and deadlines
and the run's signal inbox talk to the instance through this Protocol, so
none of them imports instance.py (WorkflowInstance implements it) and the
context never sits in a circle with the instance that makes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from harvest_engine.workflow.commands import CommandRejected
    from harvest_engine.workflow.emitter import CommandEmitter
    from harvest_engine.workflow.loop import DeterministicLoop
    from harvest_engine.workflow.progress import RunProgress
    from harvest_engine.workflow.run_info import RunInfo
    from harvest_engine.workflow.run_metadata import RunMetadata
    from harvest_engine.workflow.signals import SignalInbox


class Machine(Protocol):
    """A run's instance as its code sees it: its facts, its clock and where its calls go."""

    # The run's names, ids and attempt (`ctx.info()`).
    run: RunInfo
    # The loop the code runs on; every future the code awaits is made here.
    loop: DeterministicLoop
    # The time of the event being applied: identical on every replay.
    now: datetime
    # The seq of the last event applied (or recorded, live).
    applied_seq: int
    # How many events the history holds at this point of the code.
    history_length: int
    # The lowered byte advice the run started with, if any, and the stored
    # bytes of the events applied so far (counted only under that advice).
    advice_bytes: int | None
    history_bytes: int
    # The reason of a pending cancel request, or None.
    cancel_reason: str | None
    # Stream positions and the current details (`ctx.write_stream`, ...).
    progress: RunProgress
    # Memo and search attributes as of this point of the code.
    metadata: RunMetadata
    # Buffered signals, parked waiters and push handlers.
    signals: SignalInbox
    # Where durable calls emit their numbered commands.
    commands: CommandEmitter
    # Query handlers by name (`ctx.register_query`).
    queries: dict[str, Callable[..., Any]]
    # Update (validator, handler) pairs by name (`ctx.register_update_handler`).
    updates: dict[str, tuple[Callable[[Any], Any] | None, Callable[[Any], Any]]]

    @property
    def advice_at_or_default(self) -> int:
        """The history length at which `should_continue_as_new()` turns true."""
        ...

    def clock(self) -> datetime:
        """The decision cycle's clock when live, else the applied event's time."""
        ...

    def reject(self, feature: str, why: str) -> CommandRejected:
        """Remember a call the backend refuses; the error for the code to raise."""
        ...
