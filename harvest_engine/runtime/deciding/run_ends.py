"""RunEnds: what this process does when a write seals a run, whichever way it ended.

Every seal goes through `children.seal_run`, which hands it here: the run's
cached instance goes, and the interceptors' `run_closed` hooks are told of
it once the sealing transaction commits (a rollback, of the transaction or
of the savepoint that sealed it, tells nothing). With no such hook a seal
costs one empty-tuple test more than the eviction.
"""

from __future__ import annotations

import contextlib
import logging
from contextvars import ContextVar
from typing import TYPE_CHECKING

from harvest_engine.interceptors import START, RunClosedCall, carried
from harvest_engine.runtime.deciding.headers import stored_headers

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import datetime

    from harvest_engine.runtime.cache import InstanceCache
    from harvest_engine.runtime.registry import Registry
    from harvest_engine.store.txn_protocol import WriteTxn

log = logging.getLogger("harvest_engine.interceptors")

# The run whose own decision cycle is running (set only while run_closed hooks
# listen): a seal of that run is `decided`, any other seal (a child closed by
# its parent, a timeout before the cycle, a terminate) is not.
_DECIDING: ContextVar[str | None] = ContextVar("harvest_deciding", default=None)


@contextlib.contextmanager
def deciding(exec_id: str) -> Iterator[None]:
    """Mark the block as `exec_id`'s own decision cycle."""
    token = _DECIDING.set(exec_id)
    try:
        yield
    finally:
        _DECIDING.reset(token)


class RunEnds:
    """Evicts each sealed run and tells the `run_closed` hooks after the commit (`committed`)."""

    def __init__(self, cache: InstanceCache, registry: Registry) -> None:
        self.cache = cache
        self.registry = registry
        self._told: list[RunClosedCall] = []
        """Runs sealed by the open transaction (or one whose listeners have not run)."""

    def evict(self, exec_id: str) -> None:
        """Forget the run's cached instance (a cancel request, a run that did not end)."""
        self.cache.evict(exec_id)

    def sealed(
        self, txn: WriteTxn, exec_id: str, state: str, closed_at: datetime
    ) -> None:
        """`txn` sealed the run in `state`: evict it; its hooks hear of it once `txn` commits."""
        self.cache.evict(exec_id)
        if not self.registry.interceptors.run_closed:
            return
        row = txn.peek_execution(exec_id)
        if row is None:
            return
        call = RunClosedCall(
            exec_id=exec_id,
            workflow_name=row.workflow_name,
            workflow_id=row.workflow_id,
            state=state,
            closed_at=closed_at,
            headers=self.registry.header_memory.start(
                exec_id, lambda: stored_headers(txn.headers(exec_id, START, ""))
            ),
            cause=dict(carried() or {}),
            decided=_DECIDING.get() == exec_id,
        )
        self._told.append(call)
        txn.on_rollback(lambda: self._forget(call))

    def committed(self) -> None:
        """After a commit (a store's commit listener): tell the hooks of the runs it sealed."""
        if not self._told:
            return
        calls, self._told = self._told, []
        for call in calls:
            for hook in self.registry.interceptors.run_closed:
                try:
                    hook(call)
                except Exception:
                    # The run is sealed whatever the hook does: its bug is logged.
                    log.exception(
                        "a run_closed hook failed for run %s (%s)",
                        call.exec_id,
                        call.state,
                    )

    def _forget(self, call: RunClosedCall) -> None:
        self._told = [told for told in self._told if told is not call]
