"""Runtime settings a decision consults: history caps, the workflow log policy, query timeout."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine.workflow.defaults import CONTINUE_AS_NEW_ADVICE_EVENTS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.rows import ExecutionRecord

log = logging.getLogger("harvest_engine.runtime")


@dataclass(frozen=True)
class HistoryCaps:
    """Hard caps on one run's history; `None` removes a cap."""

    max_events: int | None = 50_000
    max_bytes: int | None = 50 * 2**20

    def __post_init__(self) -> None:
        for name in ("max_events", "max_bytes"):
            value = getattr(self, name)
            # bool is an int subclass: True would silently be a cap of 1.
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ValueError(f"HistoryCaps.{name} must be a positive int or None")


_DEFAULT_CAPS = HistoryCaps()
"""The caps a runtime starts with (read at every start, made once)."""


@dataclass(frozen=True)
class WorkflowLogPolicy:
    """Store `ctx.log` lines; at most `max_lines` per run (None: no limit), then one marker."""

    max_lines: int | None = 1000

    def __post_init__(self) -> None:
        if self.max_lines is not None and (
            not isinstance(self.max_lines, int) or self.max_lines < 1
        ):
            raise ValueError(
                "WorkflowLogPolicy.max_lines must be a positive int or None"
            )


class HistoryCapReached(Exception):
    """A decision would reach a history cap: it rolls back and the run fails."""

    def __init__(self, reason: dict[str, Any]) -> None:
        super().__init__(reason["message"])
        self.reason = reason


class Settings:
    """Mutable runtime-wide settings."""

    def __init__(self) -> None:
        self.caps = HistoryCaps()
        self.log_policy: WorkflowLogPolicy | None = None
        self.query_timeout = 5.0
        # Group commit (DESIGN "Serving"): a pass decides, claims and records
        # many runs per transaction, each run in its own savepoint. False
        # gives one transaction per decision, claim and completion (the
        # histories are the same; only the number of commits differs).
        self.group_commit = True
        # At most this many runs' decisions (or completions) per transaction,
        # so a host loop (the GUI's) gets the thread back between batches.
        self.group_commit_size = 64
        # ... and stops taking more runs once it has held the thread this
        # long (seconds), whatever the count.
        self.group_commit_seconds = 0.010
        # When a body of a pass finishes while others still run (plain
        # bodies run in threads and finish apart), its record waits up to
        # this long (seconds) for the others, so they share one commit: on
        # Postgres every commit waits for a WAL flush. 0: record at once.
        self.record_window_seconds = 0.002
        # A queued run admitted into the slot of a run that ended is decided
        # in the commit that ended it, and its first activity claimed there
        # too (the ending worker runs it), unless this answers True: other
        # workers serve the same database (PostgresRuntime), and the
        # activity is left for whichever worker claims it first, so a
        # queue's work spreads over them.
        self.share_successors: Callable[[], bool] | None = None

    def set_caps(self, caps: HistoryCaps) -> None:
        """Replace the history caps; runs started from now on follow a lowered cap's advice.

        Raises:
            TypeError: `caps` is not a HistoryCaps.
        """
        if not isinstance(caps, HistoryCaps):
            raise TypeError(
                f"set_history_caps takes a HistoryCaps, got {type(caps).__name__}"
            )
        self.caps = caps

    def advice_at(self) -> int | None:
        """Where `should_continue_as_new()` turns true when the event cap asks for less.

        At 80% of a lowered event cap, so a looping run is advised to hand
        over well before the cap fails it; None when the default advice
        (`CONTINUE_AS_NEW_ADVICE_EVENTS`) comes first.
        """
        cap = self.caps.max_events
        if cap is None:
            return None
        advised = max(1, cap * 4 // 5)
        return advised if advised < CONTINUE_AS_NEW_ADVICE_EVENTS else None

    def advice_bytes(self) -> int | None:
        """The stored history bytes at which `should_continue_as_new()` turns true, for a lowered byte cap.

        At 80% of a byte cap set below the default, as for the event cap:
        the last fifth is the room the steps between two checks of the
        advice append, so a loop that checks it before each step hands over
        while its next step still fits, as long as one step appends less
        than a fifth of the cap. None for the default cap or no cap (no
        byte advice is recorded, and none is counted).
        """
        cap = self.caps.max_bytes
        default = _DEFAULT_CAPS.max_bytes
        if cap is None or default is None or cap >= default:
            return None
        return max(1, cap * 4 // 5)

    def signal_room(self, next_seq: int) -> int:
        """How many staged signals a decision may load (-1 for no limit)."""
        if self.caps.max_events is None:
            return -1
        return max(0, self.caps.max_events - (next_seq - 1))

    def signal_byte_room(self, row: ExecutionRecord) -> int | None:
        """How many payload bytes of staged signals a decision may load (None: no limit).

        The byte cap counts the stored history when the decision starts,
        so the decision that crosses it is allowed; loading stops
        at the crossing signal rather than taking in a whole flood.
        """
        if self.caps.max_bytes is None:
            return None
        return max(0, self.caps.max_bytes - row.history_bytes)

    def check_caps(
        self,
        row: ExecutionRecord,
        events: Sequence[HistoryEvent],
        seal: tuple[str, dict[str, Any]] | None,
    ) -> None:
        """Raise HistoryCapReached when the decision's appends reach a cap.

        A continuing run is exempt: its successor starts a new history.
        """
        if seal is not None and seal[0] == "CONTINUED_AS_NEW":
            return
        total = row.next_seq - 1 + len(events)
        caps = self.caps
        if caps.max_events is not None and total >= caps.max_events and events:
            raise HistoryCapReached(
                {
                    "type": "HistoryCapReached",
                    "cap": "max_events",
                    "limit": caps.max_events,
                    "value": total,
                    "message": f"history reached its cap of {caps.max_events} events",
                }
            )
        if (
            caps.max_bytes is not None
            and row.history_bytes >= caps.max_bytes
            and events
        ):
            raise HistoryCapReached(
                {
                    "type": "HistoryCapReached",
                    "cap": "max_bytes",
                    "limit": caps.max_bytes,
                    "value": row.history_bytes,
                    "message": f"history reached its cap of {caps.max_bytes} bytes",
                }
            )
