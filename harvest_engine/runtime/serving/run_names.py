"""The workflow name of each run whose activities this runtime runs, remembered.

An activity's context names its run's workflow; a run never changes it, so
it is read once per run, or not at all when the admission that let the run
in already knew it (flow control's `Gatekeeper`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvest_engine.store.protocol import DurableStore

NAME_MEMORY = 4096
"""How many runs' workflow names are remembered before the memory starts over."""


class RunNames:
    """Workflow names by run, read from the store the first time one is asked for."""

    def __init__(self, store: DurableStore) -> None:
        self.store = store
        self._names: dict[str, str] = {}

    def of(self, exec_id: str) -> str:
        """The run's workflow name ("" for a run that is gone)."""
        name = self._names.get(exec_id)
        if name is None:
            row = self.store.execution(exec_id)
            name = row.workflow_name if row else ""
            self.remember(exec_id, name)
        return name

    def remember(self, exec_id: str, name: str) -> None:
        """Keep a run's workflow name that is known already."""
        if len(self._names) >= NAME_MEMORY:
            self._names.clear()
        self._names[exec_id] = name
