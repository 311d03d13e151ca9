"""CommitListeners: what a store calls after each commit of its writes, for either store."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


class CommitListeners:
    """The callbacks; a store runs `fns` after each commit (inline: one loop, no call more)."""

    def __init__(self) -> None:
        self.fns: list[Callable[[], None]] = []

    def add(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call `fn()` after each commit; returns what removes it."""
        self.fns.append(fn)
        return lambda: self.remove(fn)

    def remove(self, fn: Callable[[], None]) -> None:
        """Stop calling `fn` (a no-op when it is not there)."""
        if fn in self.fns:
            self.fns.remove(fn)
