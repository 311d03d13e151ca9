"""InstanceCache: suspended workflow instances of recently driven runs, bounded, LRU.

A cached instance has applied the history up to its `applied_seq`, so the
next cycle feeds it only newer events: a run of K activities costs O(K), not
O(K²). Any doubt (an error, a rollback, a close) evicts; a miss replays the
whole history, which gives the same result.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvest_engine.workflow.instance import WorkflowInstance

# About 11 KB an instance of a small workflow: 4,096 keeps 10,000 parked
# runs under ~110 MB RSS, while a fleet of up to 4,096 runs in flight never
# replays (at 256, 1,000 runs in flight replayed on every decision and ran
# at two thirds of the speed; bench/PERF-NOTES.md).
DEFAULT_CAPACITY = 4096


class InstanceCache:
    """At most `capacity` instances; the least recently used goes first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._items: collections.OrderedDict[str, WorkflowInstance] = (
            collections.OrderedDict()
        )
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        """Calls of `evict` (every run that ends is evicted): flow control's hint
        that a queue's slot may have freed."""

    def take(self, exec_id: str) -> WorkflowInstance | None:
        """Remove and return the run's instance (a cycle owns it until it puts it back)."""
        instance = self._items.pop(exec_id, None)
        if instance is None:
            self.misses += 1
        else:
            self.hits += 1
        return instance

    def put(self, exec_id: str, instance: WorkflowInstance) -> None:
        """Keep an instance after a committed cycle."""
        if self.capacity <= 0:
            instance.close()
            return
        self._items[exec_id] = instance
        self._items.move_to_end(exec_id)
        while len(self._items) > self.capacity:
            _, old = self._items.popitem(last=False)
            old.close()

    def evict(self, exec_id: str) -> None:
        """Forget a run's instance."""
        self.evictions += 1
        instance = self._items.pop(exec_id, None)
        if instance is not None:
            instance.close()

    def clear(self) -> None:
        """Forget every instance."""
        for instance in self._items.values():
            instance.close()
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
