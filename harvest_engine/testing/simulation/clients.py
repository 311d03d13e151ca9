"""Simulated clients: each queues commands on the store's command queue, as a real client does.

A client writes a command row (a `wire` record under a command id) and
later reads its reply; the serving side applies it. The harness picks which
client acts next, so the order commands arrive in is the seed's. A client
that "lost its connection" after queueing sends the same command id again,
which must not apply it twice. Every signal payload is a unique token, so
the invariants can find each signal's one event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvest_engine import payloads, wire

if TYPE_CHECKING:
    import random
    from datetime import datetime

    from harvest_engine.testing.simulation.backends import ClientQueue
    from harvest_engine.testing.simulation.workload import Workload

KEYS = ("k1", "k2")


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

    def make(self, client: int, runs: list[str]) -> Sent:
        """A new command of a random kind from `client` (a start when no run is known)."""
        self._next[client] += 1
        cid = f"c{client}-{self._next[client]}"
        token = cid
        rng, load = self.rng, self.workload
        choice = rng.random()
        if not runs or choice < 0.25:
            name, value = load.starts(rng)
            record: wire.Command = wire.StartWorkflowWithId(
                name, f"wf-{cid}", payloads.to_json(value)
            )
            return Sent(cid, record, token)
        target = rng.choice(runs)
        if load.signals and choice < 0.6:
            signal = rng.choice(list(load.signals))
            payload = {"token": token}
            if rng.random() < 0.3:
                key = rng.choice(KEYS)
                record = wire.SendSignalIdempotent(target, signal, payload, key)
            else:
                record = wire.SendSignal(target, signal, payload)
        elif load.queries and choice < 0.75:
            record = wire.Query(target, rng.choice(list(load.queries)))
        elif load.updates and choice < 0.9:
            name, arg = rng.choice(list(load.updates))
            record = wire.Update(target, name, arg)
        else:
            record = wire.Cancel(target, f"cancelled by {cid}")
        return Sent(cid, record, token)

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
