"""Engine: the parts every concern of the runtime takes, instead of the facade.

The store, the clock, the registered code, the settings, the instance cache,
the waker of a serving loop, the commits in-process readers wait on, the decider
and the running attempts, with the few helpers every
call needs (an id checked and made text, a wake after work was made). A
concern module takes an `Engine` (or one of its parts) and says by that what
it needs; none takes the `Runtime` facade, so the facade sits on top of the
wings and nothing below imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from harvest_engine.errors import ExecutionNotFound
from harvest_engine.interceptors import Interceptors
from harvest_engine.names import MAX_NAME_CHARS
from harvest_engine.runtime.attempts import RunningAttempts
from harvest_engine.runtime.cache import InstanceCache
from harvest_engine.runtime.deciding.decide import Decider
from harvest_engine.runtime.deciding.run_ends import RunEnds
from harvest_engine.runtime.registry import Registry
from harvest_engine.runtime.settings import Settings
from harvest_engine.runtime.waker import Changes, Waker

if TYPE_CHECKING:
    from collections.abc import Iterable

    from harvest_engine.clock import Clock
    from harvest_engine.interceptors import Interceptor
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.protocol import DurableStore

_T = TypeVar("_T")


class Engine:
    """The runtime's parts, made once per runtime and shared by every wing."""

    def __init__(
        self,
        store: DurableStore,
        clock: Clock,
        interceptors: Iterable[Interceptor] = (),
    ) -> None:
        self.store = store
        self.clock = clock
        self.registry = Registry()
        self.registry.interceptors = Interceptors(interceptors)
        self.settings = Settings()
        self.cache = InstanceCache()
        self.waker = Waker()
        self.changes = Changes()
        store.add_commit_listener(self.changes.committed)
        # Every seal goes through `ends`: the instance is evicted, and the
        # interceptors' run_closed hooks are told after the commit.
        self.ends = RunEnds(self.cache, self.registry)
        if self.registry.interceptors.run_closed:
            store.add_commit_listener(self.ends.committed)
        self.decider = Decider(
            store, self.registry, self.cache, self.settings, self.ends
        )
        # The attempts this process runs: a cancel any write announced (this
        # process's or, on Postgres, another worker's) reaches their bodies.
        self.attempts = RunningAttempts()
        store.add_cancel_listener(self.attempts.cancel)
        self.closed = False
        # A write that storage failed may have carried any run's cycle (one
        # run's, or a batch's): no cached instance may run ahead of the file.
        store.add_rollback_listener(lambda _error: self.cache.clear())

    def close(self) -> None:
        """Drop the cached instances and release the store (safe to call twice)."""
        if not self.closed:
            self.closed = True
            self.cache.clear()
            self.store.close()

    def require(self, exec_id: str | ExecutionId) -> str:
        """The id as text; ExecutionNotFound when no run has it."""
        text = id_text(exec_id)
        if not self.store.exists(text):
            raise ExecutionNotFound(exec_id=exec_id)
        return text

    def woken(self, value: _T) -> _T:
        """Wake a serving loop after a call that made work; pass `value` through."""
        self.waker.wake()
        return value


def id_text(exec_id: str | ExecutionId) -> str:
    """The id as text; ExecutionNotFound for one no run could have (no read).

    No run could have a blank id, one past the name cap, or text that is not
    storable (a lone surrogate). Checked inline: every call into a run pays it.
    """
    text = str(exec_id).strip() if exec_id is not None else ""
    if not text or len(text) > MAX_NAME_CHARS:
        raise ExecutionNotFound(exec_id=exec_id)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ExecutionNotFound(exec_id=exec_id) from None
    return text
