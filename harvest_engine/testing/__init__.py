"""Testing workflows without waiting: an in-process environment whose clock skips ahead.

`WorkflowEnvironment` runs a real runtime on a private database file with a
`ManualClock`, and `harvest_engine.testing.plugin` is the pytest plugin
(fixture `harvest_env`) that pip registers as a `pytest11` entry point.
"""

from __future__ import annotations

from harvest_engine.testing.environment import WorkflowEnvironment

__all__ = ["WorkflowEnvironment"]
