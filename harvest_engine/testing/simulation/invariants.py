"""The invariants the harness checks after every step, on the durable state only.

They read through the real store under the simulated one (a check is never
a statement the fault plan counts) and fail with a sentence naming the run:

- history append-only: every event recorded stays, unchanged, in place;
- each activity completion recorded at most once (one ending per activity id);
- no signal doubled: a token (each client signal's unique payload) appears
  in at most one event, and a keyed signal's key at most once per run;
- every command applied exactly once: a refused command left no event, and
  (at convergence) an accepted signal is in its run's history exactly once;
- every history replays on `WorkflowReplayer` to the same commands.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from harvest_engine.errors import HarvestError
from harvest_engine.filters import ExecutionFilter
from harvest_engine.payloads import dumps
from harvest_engine.workflow.replay import WorkflowReplayer

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harvest_engine.events import HistoryEvent
    from harvest_engine.store.protocol import DurableStore
    from harvest_engine.testing.simulation.clients import Sent

_ENDINGS = ("Completed", "Failed", "TimedOut")
_PAGE = 500
_UNREAD = "the body reading every signal first"


def _fingerprint(event: HistoryEvent) -> str:
    return f"{event.seq} {event.type} {dumps(event.attrs)}"


def signal_token(event: HistoryEvent) -> str | None:
    """The client token a SignalReceived event carries, if any."""
    if event.type != "SignalReceived":
        return None
    payload = event.attrs.get("payload")
    token = payload.get("token") if isinstance(payload, dict) else None
    return token if isinstance(token, str) else None


class Invariants:
    """Remembers what it saw and checks the store against it; `checks` counts them."""

    def __init__(self, workflows: Sequence[Callable[..., Any]]) -> None:
        self.replayer = WorkflowReplayer(list(workflows))
        self.seen: dict[str, list[str]] = {}
        self.histories: dict[str, list[HistoryEvent]] = {}
        self.states: dict[str, str] = {}
        self.checks = 0
        self.cancel_exempt = 0
        self.tokens: Counter[str] = Counter()
        self.roots: Counter[str] = Counter()

    def run_ids(self, store: DurableStore) -> list[str]:
        """Every run's id, oldest first."""
        ids: list[str] = []
        cursor: int | None = None
        while True:
            page = store.list_executions(ExecutionFilter().limit(_PAGE).before(cursor))
            ids += [str(row.exec_id) for row in page.executions]
            for row in page.executions:
                self.states[str(row.exec_id)] = row.state
            if page.next is None:
                return ids[::-1]
            cursor = page.next

    def check(self, store: DurableStore) -> list[str]:
        """Check every run; the violations found (empty when all hold)."""
        problems: list[str] = []
        tokens: Counter[str] = Counter()
        roots: Counter[str] = Counter()
        for exec_id in self.run_ids(store):
            row = store.execution(exec_id)
            if row is not None and row.predecessor is None:
                roots[row.workflow_id] += 1
            events = store.load_events(exec_id)
            problems += self._append_only(exec_id, events)
            problems += self._activities(exec_id, events)
            problems += self._keys(exec_id, events)
            for event in events:
                token = signal_token(event)
                if token is not None:
                    tokens[token] += 1
            if len(events) != len(self.histories.get(exec_id, ())):
                problems += self._replays(exec_id, events)
            self.histories[exec_id] = events
        problems += [
            f"signal {token} recorded {n} times" for token, n in tokens.items() if n > 1
        ]
        self.tokens = tokens
        self.roots = roots
        return problems

    def _append_only(self, exec_id: str, events: list[HistoryEvent]) -> list[str]:
        self.checks += 1
        prints = [_fingerprint(e) for e in events]
        before = self.seen.get(exec_id, [])
        self.seen[exec_id] = prints
        if prints[: len(before)] != before:
            at = next(
                (
                    i
                    for i, (a, b) in enumerate(zip(before, prints, strict=False))
                    if a != b
                ),
                len(prints),
            )
            return [
                f"run {exec_id[:8]}: history changed at event {at + 1} (append-only)"
            ]
        return []

    def _activities(self, exec_id: str, events: list[HistoryEvent]) -> list[str]:
        """Once an activity completed, nothing more is recorded for it.

        Failed attempts of a local activity are events, so only completions count.
        """
        self.checks += 1
        completed: set[int] = set()
        problems: list[str] = []
        for event in events:
            if not event.type.startswith(("Activity", "LocalActivity")):
                continue
            if not event.type.endswith(_ENDINGS):
                continue
            aid = int(event.attrs.get("activity_id", -1))
            if aid in completed:
                problems.append(
                    f"run {exec_id[:8]}: activity {aid} recorded after its completion"
                    f" ({event.type}, event {event.seq})"
                )
            if event.type.endswith("Completed"):
                completed.add(aid)
        return problems

    def _keys(self, exec_id: str, events: list[HistoryEvent]) -> list[str]:
        self.checks += 1
        keys = Counter(
            str(e.attrs["key"])
            for e in events
            if e.type == "SignalReceived" and e.attrs.get("key")
        )
        return [
            f"run {exec_id[:8]}: signal key {key} delivered {n} times"
            for key, n in keys.items()
            if n > 1
        ]

    def _replays(self, exec_id: str, events: list[HistoryEvent]) -> list[str]:
        self.checks += 1
        try:
            self.replayer.replay(events)
        except HarvestError as exc:
            if type(exc).__name__ not in ("NonDeterminismDetected", "DatabaseCorrupt"):
                return []
            # Strict replay also reports a body that ended with a signal it never
            # read; clients here signal any run, so that is the workload's doing.
            if str(getattr(exc, "expected", "")).startswith(_UNREAD):
                return []
            # Strict replay shows a cancelled body the request from its start:
            # one parked where it never checked it, or one that checked it in a
            # loop after commands recorded before the request came, is reported
            # by design (tests/engine/test_cancel.py); the engine sealed it.
            if (
                events
                and events[-1].type == "WorkflowCancelled"
                and not events[-1].attrs.get("imposed")
            ):
                self.cancel_exempt += 1
                return []
            return [f"run {exec_id[:8]}: replay diverged: {exc}"]
        return []

    def commands(self, sent: Sequence[Sent], *, converged: bool) -> list[str]:
        """Each applied command once: refused ones left nothing; at the end, accepted signals are in."""
        problems: list[str] = []
        keyed: Counter[tuple[str, str]] = Counter()
        for command in sent:
            problems += self._started_once(command)
            if command.reply is None or not _is_signal(command):
                continue
            key = getattr(command.record, "key", None)
            if key and command.ok and command.result() is True:
                keyed[(str(getattr(command.record, "exec_id", "")), str(key))] += 1
            self.checks += 1
            n = self.tokens.get(command.token, 0)
            delivered = command.ok and command.result() is not False
            if not delivered and n:
                problems.append(
                    f"refused signal {command.command_id} recorded {n} times"
                )
            elif delivered and converged and n != 1:
                target = str(getattr(command.record, "exec_id", ""))
                if n == 0 and self._dropped_legally(target):
                    continue
                problems.append(
                    f"accepted signal {command.command_id} recorded {n} times"
                )
        problems += [
            f"run {exec_id[:8]}: signal key {key} accepted {n} times"
            for (exec_id, key), n in keyed.items()
            if n > 1
        ]
        return problems

    def _started_once(self, command: Sent) -> list[str]:
        """A start command made one run of its workflow id (none when refused)."""
        if command.record.KIND != "start_workflow_with_id":
            return []
        self.checks += 1
        n = self.roots.get(str(getattr(command.record, "workflow_id", "")), 0)
        if n > 1 or (command.reply is not None and n != int(command.ok)):
            return [f"start {command.command_id} made {n} runs"]
        return []

    def _dropped_legally(self, exec_id: str) -> bool:
        """A run closed by cancel or terminate drops the signals it had not taken."""
        events = self.histories.get(exec_id, [])
        return bool(events) and events[-1].type in (
            "WorkflowCancelled",
            "WorkflowTerminated",
        )


def _is_signal(command: Sent) -> bool:
    return command.record.KIND in ("send_signal", "send_signal_idempotent")
