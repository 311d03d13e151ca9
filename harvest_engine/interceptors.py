"""Interceptors: typed hooks around starts, signals, queries, updates, decisions, attempts and client commands.

An `Interceptor` overrides the hooks it needs. Each hook gets the call's
record and `proceed`, the rest of the chain: it may read or change the
record (its `headers` above all), call `proceed(call)` once and return
what it returns (or raise). Interceptors are given at open/connect
(``SqliteRuntime.open(path, interceptors=[...])``, ``HarvestClient.open(path,
interceptors=[...])``); the first one given is the outermost.

Headers are a small map of text to text that travels with a call: from a
client command to the serving process, stored with a run's start and with
each activity (and child) a decision schedules, so context (a W3C
``traceparent``) crosses processes and survives a crash and a reopen.

One hook is a notice, not a wrapper: `run_closed` is told of every run
sealed, whichever way it ended (its own decision, a terminate, a cancel, a
reset, a timeout, its parent's close), once the sealing write committed.

With no interceptor installed the runtime skips every hook (one empty-tuple
test per call site); a hook an interceptor does not override is skipped too.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping

    from harvest_engine.activity import AttemptResult

R = TypeVar("R")

Headers = dict[str, str]

MAX_HEADERS = 32
MAX_HEADER_CHARS = 1024

# Where headers are stored, by the kind of call that carried them.
START = "start"
ACTIVITY = "activity"
SIGNAL = "signal"


def checked_headers(headers: Mapping[str, str] | None) -> Headers:
    """A copy of `headers`, or ValueError/TypeError for a map that cannot travel.

    At most MAX_HEADERS entries, each key and value text of at most
    MAX_HEADER_CHARS characters: headers carry context, not payloads.
    """
    if headers is None:
        return {}
    if len(headers) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers travel with a call")
    out: Headers = {}
    for key, value in headers.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"headers are text to text, got {key!r}: {value!r}")
        if not key or len(key) > MAX_HEADER_CHARS or len(value) > MAX_HEADER_CHARS:
            raise ValueError(
                f"a header key is 1 to {MAX_HEADER_CHARS} characters, its value at most that"
            )
        out[key] = value
    return out


# -- the call records ------------------------------------------------------------


@dataclass
class StartCall:
    """A start (any kind: plain, by id, with options, signal-/update-with-start)."""

    workflow_name: str
    workflow_id: str | None
    input: Any
    headers: Headers = field(default_factory=dict)


@dataclass
class SignalCall:
    """A signal sent to a run (by run id, or by workflow id when `exec_id` is None)."""

    exec_id: str | None
    workflow_id: str | None
    name: str
    payload: Any
    headers: Headers = field(default_factory=dict)


@dataclass
class QueryCall:
    """A query answered from a run's history (writes nothing)."""

    exec_id: str
    name: str
    arg: Any
    headers: Headers = field(default_factory=dict)


@dataclass
class UpdateCall:
    """An update: validated, then recorded with its result in one transaction."""

    exec_id: str
    name: str
    arg: Any
    headers: Headers = field(default_factory=dict)


@dataclass
class DecisionCall:
    """One decision cycle of a run.

    `headers` are the run's start headers (read, not written); `outbound`
    starts as a copy of them and is stored with every activity and child
    this decision schedules, each signal it sends, and a continued or
    retried run. `signal_headers` are those of the staged signals this
    decision may deliver that carry some, in arrival order.
    """

    exec_id: str
    workflow_name: str
    workflow_id: str
    attempt: int
    first: bool
    headers: Headers
    outbound: Headers
    signal_headers: list[Headers] = field(default_factory=list)


@dataclass(frozen=True)
class DecisionResult:
    """What a decision did: `state` is the run's state when it ended in it, else None."""

    exec_id: str
    state: str | None
    progressed: bool


@dataclass
class ActivityCall:
    """One activity attempt, around its body (outside any transaction).

    `headers` are the ones stored with the activity when its decision
    scheduled it (else the run's start headers). `ready_at` is when the
    attempt became ready to run, `started_at` when its body starts.
    """

    exec_id: str
    workflow_name: str
    activity_name: str
    activity_id: int
    attempt: int
    input: Any
    ready_at: datetime
    started_at: datetime
    headers: Headers


@dataclass(frozen=True)
class RunClosedCall:
    """A run sealed (any way: its decision, terminate, cancel, reset, a timeout, a parent's close).

    Told after the transaction that sealed it commits, in the process that
    sealed it. `headers` are the run's start headers; `cause` those the
    sealing call carried (a client command's, the deciding run's
    `outbound`), empty when none. `decided` is true when the run's own
    decision sealed it: its `decision` hook's result then has the state too.
    """

    exec_id: str
    workflow_name: str
    workflow_id: str
    state: str
    closed_at: datetime
    headers: Headers
    cause: Headers
    decided: bool


@dataclass
class ClientCommandCall:
    """A `HarvestClient` command, before it is queued; `headers` travel with it."""

    kind: str
    args: dict[str, Any]
    headers: Headers = field(default_factory=dict)


# -- the hooks -------------------------------------------------------------------


class Interceptor:
    """Hooks around the engine's calls; override the ones you need (see the module doc).

    Each default passes the call on unchanged. A hook that raises fails the
    call as the call's own error would: a start, signal, query, update or
    client command raises it to its caller; an attempt fails with it (and
    retries as its policy says); a decision rolls back and counts as a
    panic of the run (retried after its backoff, as workflow code raising
    outside its body).
    """

    def start(self, call: StartCall, proceed: Callable[[StartCall], R]) -> R:
        """Around a start in the runtime; the result has the run's `exec_id` (or is it)."""
        return proceed(call)

    def signal(self, call: SignalCall, proceed: Callable[[SignalCall], R]) -> R:
        """Around staging a signal."""
        return proceed(call)

    def query(self, call: QueryCall, proceed: Callable[[QueryCall], R]) -> R:
        """Around answering a query (the handler's value)."""
        return proceed(call)

    def update(self, call: UpdateCall, proceed: Callable[[UpdateCall], R]) -> R:
        """Around an update (its recorded result)."""
        return proceed(call)

    def decision(
        self,
        call: DecisionCall,
        proceed: Callable[[DecisionCall], DecisionResult],
    ) -> DecisionResult:
        """Around one decision cycle (inside its transaction)."""
        return proceed(call)

    async def activity(
        self,
        call: ActivityCall,
        proceed: Callable[[ActivityCall], Awaitable[AttemptResult]],
    ) -> AttemptResult:
        """Around one activity attempt's body; the result has `ok`, `output`, `error`."""
        return await proceed(call)

    async def client_command(
        self,
        call: ClientCommandCall,
        proceed: Callable[[ClientCommandCall], Awaitable[R]],
    ) -> R:
        """Around a client command: queued with its headers, its reply awaited."""
        return await proceed(call)

    def run_closed(self, call: RunClosedCall) -> None:
        """Told of a run sealed, after the commit (the call has already happened: no `proceed`).

        Runs inside the store's commit (keep it short, write nothing through
        the runtime); an error it raises is logged and dropped, since the
        run is sealed whatever a hook says.
        """


_HOOKS = (
    "start",
    "signal",
    "query",
    "update",
    "decision",
    "activity",
    "client_command",
    "run_closed",
)


class Interceptors:
    """The chains of the interceptors given at open: per hook, only those that override it."""

    def __init__(self, interceptors: Iterable[Interceptor] = ()) -> None:
        given = tuple(interceptors)
        for item in given:
            if not isinstance(item, Interceptor):
                raise TypeError(f"interceptors are Interceptor instances, got {item!r}")
        self.all = given
        chains = {
            hook: tuple(
                getattr(item, hook)
                for item in given
                if getattr(type(item), hook) is not getattr(Interceptor, hook)
            )
            for hook in _HOOKS
        }
        # One attribute per hook: a call site tests it (an empty tuple) and
        # skips the hook entirely when nobody intercepts it.
        self.start: tuple[Callable[..., Any], ...] = chains["start"]
        self.signal: tuple[Callable[..., Any], ...] = chains["signal"]
        self.query: tuple[Callable[..., Any], ...] = chains["query"]
        self.update: tuple[Callable[..., Any], ...] = chains["update"]
        self.decision: tuple[Callable[..., Any], ...] = chains["decision"]
        self.activity: tuple[Callable[..., Any], ...] = chains["activity"]
        self.client_command: tuple[Callable[..., Any], ...] = chains["client_command"]
        self.run_closed: tuple[Callable[..., Any], ...] = chains["run_closed"]

    def __bool__(self) -> bool:
        return bool(self.all)


def chained(
    hooks: tuple[Callable[..., Any], ...], final: Callable[[Any], R]
) -> Callable[[Any], R]:
    """`final` wrapped by `hooks`, the first the outermost."""
    proceed: Callable[[Any], Any] = final
    for hook in reversed(hooks):
        proceed = _link(hook, proceed)
    return proceed


def _link(
    hook: Callable[..., Any], proceed: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    return lambda call: hook(call, proceed)


# -- headers carried by the write in progress ----------------------------------------

_CARRIED: ContextVar[Headers | None] = ContextVar("harvest_headers", default=None)


def carried() -> Headers | None:
    """The headers the call in progress carries (stored with the run or task it makes)."""
    return _CARRIED.get()


@contextlib.contextmanager
def carrying(headers: Headers | None) -> Iterator[None]:
    """Carry `headers` for the block: a start or a scheduled activity in it stores them.

    None carries nothing (no hook ran); an empty map says hooks ran and
    left none, so what the block schedules is known to have none.
    """
    token = _CARRIED.set(headers)
    try:
        yield
    finally:
        _CARRIED.reset(token)


__all__ = [
    "ACTIVITY",
    "START",
    "ActivityCall",
    "ClientCommandCall",
    "DecisionCall",
    "DecisionResult",
    "Headers",
    "Interceptor",
    "Interceptors",
    "QueryCall",
    "RunClosedCall",
    "SignalCall",
    "StartCall",
    "UpdateCall",
    "carried",
    "carrying",
    "chained",
    "checked_headers",
]
