"""Simulated clients: each queues commands on the store's command queue, as a real client does.

A client writes a command row (a `wire` record under a command id) and
later reads its reply; the serving side applies it. The harness picks which
client acts next, so the order commands arrive in is the seed's. A client
that "lost its connection" after queueing sends the same command id again,
which must not apply it twice. Besides starts, signals, queries, updates
and cancels, a client starts runs into a queue (priorities, dedup ids),
resets runs (failed or running), pauses and unpauses them. Every signal payload is a unique token, so
the invariants can find each signal's one event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads, wire, wire_repairs

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence
    from datetime import datetime

    from harvest_engine.testing.simulation.backends import ClientQueue
    from harvest_engine.testing.simulation.workload import Workload

KEYS = ("k1", "k2")
DEDUP_IDS = ("d1", "d2")


@dataclass
class Sent:
    """One command a client queued: its record, and its reply once applied."""

    command_id: str
    record: wire.Command
    token: str
    reply: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the reply says the command succeeded."""
        return self.reply is not None and not wire.is_refusal(self.reply)

    def result(self) -> Any:
        """The reply's value (ok replies only)."""
        return payloads.loads(self.reply or "null").get("ok")


class Clients:
    """N clients sharing one command queue; what each sent, by command id."""

    def __init__(self, count: int, workload: Workload, rng: random.Random) -> None:
        self.count = count
        self.workload = workload
        self.rng = rng
        self.sent: dict[str, Sent] = {}
        self._next = [0] * count

    def make(self, client: int, runs: list[str], failed: Sequence[str] = ()) -> Sent:
        """A new command of a random kind from `client` (a start when no run is known).

        `runs` are the running runs (or every run when none runs), `failed`
        the failed ones, which a reset may also target.
        """
        self._next[client] += 1
        cid = f"c{client}-{self._next[client]}"
        token = cid
        rng, load = self.rng, self.workload
        choice = rng.random()
        if not runs or choice < 0.2:
            name, value = load.starts(rng)
            record: wire.Command = wire.StartWorkflowWithId(
                name, f"wf-{cid}", payloads.to_json(value)
            )
            return Sent(cid, record, token)
        if load.queue_starts is not None and load.queues and choice < 0.3:
            return Sent(cid, self._queue_start(cid), token)
        target = rng.choice(runs)
        if load.signals and choice < 0.55:
            signal = rng.choice(list(load.signals))
            payload = {"token": token}
            if rng.random() < 0.3:
                key = rng.choice(KEYS)
                record = wire.SendSignalIdempotent(target, signal, payload, key)
            else:
                record = wire.SendSignal(target, signal, payload)
        elif load.queries and choice < 0.65:
            record = wire.Query(target, rng.choice(list(load.queries)))
        elif load.updates and choice < 0.77:
            name, arg = rng.choice(list(load.updates))
            record = wire.Update(target, name, arg)
        elif not load.repairs or choice < 0.83:
            record = wire.Cancel(target, f"cancelled by {cid}")
        else:
            record = self._repair(cid, target, failed)
        return Sent(cid, record, token)

    def _queue_start(self, cid: str) -> wire.Command:
        """A start into the workload's first queue, with a priority and maybe a dedup id."""
        rng, load = self.rng, self.workload
        assert load.queue_starts is not None
        name, value = load.queue_starts(rng)
        return wire.StartWorkflowWithOptions(
            name,
            payloads.to_json(value),
            workflow_id=f"wf-{cid}",
            queue=load.queues[0].name,
            priority=rng.choice((0, 0, 5)) if load.queues[0].priority else None,
            dedup_id=rng.choice((None, None, *DEDUP_IDS)),
        )

    def _repair(self, cid: str, target: str, failed: Sequence[str]) -> wire.Command:
        """A reset (of a failed run or the running `target`), a pause or an unpause."""
        which = self.rng.random()
        if which < 0.4:
            victim = self.rng.choice(list(failed)) if failed and which < 0.2 else target
            return wire_repairs.Reset(victim, f"reset by {cid}")
        if which < 0.7:
            return wire_repairs.Pause(target, f"paused by {cid}")
        return wire_repairs.Unpause(target)

    def submit(self, queue: ClientQueue, sent: Sent, now: datetime) -> bool:
        """Queue a command (again, for a retry); False when its id was queued already."""
        self.sent.setdefault(sent.command_id, sent)
        text = payloads.dumps(sent.record.args())
        return queue.submit(sent.command_id, sent.record.KIND, text, now)

    def read_replies(self, queue: ClientQueue) -> list[Sent]:
        """Read the replies that arrived since the last look; the commands answered now."""
        answered = []
        for sent in self.sent.values():
            if sent.reply is not None:
                continue
            got = queue.reply(sent.command_id)
            if got is not None and got[0]:
                sent.reply = got[1]
                answered.append(sent)
        return answered
