"""The pytest plugin (entry point `harvest`): the `harvest_env` fixture, and async tests that use it.

`harvest_env` is a factory: ``async with harvest_env(workflows=[...],
activities=[...]) as env`` opens a `WorkflowEnvironment` whose database
lives in the test's `tmp_path` (kept for a failed test's post-mortem). An
``async def`` test that asks for `harvest_env` runs on a fresh event loop
here unless another plugin (pytest-asyncio, anyio) ran it first.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

import pytest

from harvest_engine.testing.environment import WorkflowEnvironment

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractAsyncContextManager
    from pathlib import Path

    from harvest_engine.clock import ManualClock


class EnvFactory:
    """What `harvest_env` gives a test: call it to start an environment in the test's folder."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._count = 0

    def __call__(
        self,
        *,
        workflows: Sequence[Callable[..., Any]] = (),
        activities: Sequence[Callable[..., Any]] = (),
        clock: ManualClock | None = None,
        auto_time_skipping: bool = True,
    ) -> AbstractAsyncContextManager[WorkflowEnvironment]:
        """`WorkflowEnvironment.start` with its database in a fresh folder of the test's tmp_path."""
        self._count += 1
        folder = self.directory / f"env{self._count}"
        folder.mkdir()
        return WorkflowEnvironment.start(
            workflows=workflows,
            activities=activities,
            directory=folder,
            clock=clock,
            auto_time_skipping=auto_time_skipping,
        )


@pytest.fixture
def harvest_env(tmp_path: Path) -> EnvFactory:
    """A factory of WorkflowEnvironments whose files live in the test's tmp_path."""
    return EnvFactory(tmp_path)


@pytest.hookimpl
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run an ``async def`` test that uses `harvest_env` on a fresh loop, if no plugin did."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    if "harvest_env" not in pyfuncitem.fixturenames:
        return None
    names = pyfuncitem._fixtureinfo.argnames  # noqa: SLF001 - pytest's own way to the test's args
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(pyfuncitem.obj(**kwargs))
    return True
