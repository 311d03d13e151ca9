"""A plain body's thread hand-off (body_threads.py): the loop's executor, one hop back."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest

from harvest_engine.activity import run_attempt
from harvest_engine.body_threads import run_in_thread


def test_a_plain_body_runs_in_the_default_executor_without_run_in_executor() -> None:
    seen: list[str] = []

    def body(x: int) -> int:
        seen.append(threading.current_thread().name)
        return x + 1

    async def main() -> Any:
        loop = asyncio.get_running_loop()

        def refused(*_: Any) -> Any:
            raise AssertionError("run_in_executor chains two futures per body")

        loop.run_in_executor = refused  # type: ignore[method-assign]
        result = await run_attempt(body, (1,), budget=None)
        executor = loop._default_executor  # type: ignore[attr-defined]
        return result, executor

    result, executor = asyncio.run(main())
    assert result.ok
    assert result.output == 2
    assert isinstance(executor, concurrent.futures.ThreadPoolExecutor)
    assert seen
    assert seen[0].startswith("asyncio")
    assert seen[0] != "MainThread"


def test_a_body_error_and_a_cancel_while_queued_arrive_as_before() -> None:
    ran: list[int] = []
    gate = threading.Event()

    def boom() -> None:
        raise ValueError("bad")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=1))
        with pytest.raises(ValueError, match="bad"):
            await run_in_thread(loop, boom)
        busy = run_in_thread(loop, gate.wait)  # holds the only thread
        queued = run_in_thread(loop, lambda: ran.append(1))
        queued.cancel()
        gate.set()
        await busy

    asyncio.run(main())  # waits for the executor's threads at its end
    assert ran == []


def test_a_default_executor_of_its_own_class_keeps_the_chained_path() -> None:
    submitted: list[Any] = []

    class Counted(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            submitted.append(fn)
            return super().submit(fn, *args, **kwargs)

    def seven() -> int:
        return 7

    async def main() -> int:
        asyncio.get_running_loop().set_default_executor(Counted())
        return await run_in_thread(asyncio.get_running_loop(), seven)

    assert asyncio.run(main()) == 7
    assert submitted == [seven]  # handed as run_in_executor hands it


def test_a_pass_runs_its_plain_bodies_in_threads_with_no_task_each(
    tmp_path: Any,
) -> None:
    from harvest_engine import (
        ActivityContext,
        SqliteRuntime,
        WorkflowContext,
        activity,
        workflow,
    )

    threads: set[str] = set()

    @activity
    def plain_step(ctx: ActivityContext, x: int) -> int:
        threads.add(threading.current_thread().name)
        return x + 1

    @workflow
    async def two_plain_steps(ctx: WorkflowContext, x: int) -> int:
        for _ in range(2):
            x = await ctx.execute_activity(plain_step, x)
        return x

    rt = SqliteRuntime.open(tmp_path / "plain.db")
    rt.register_workflow(two_plain_steps)
    rt.register_activity(plain_step)
    made: list[Any] = []

    async def drive() -> None:
        loop = asyncio.get_running_loop()

        def factory(loop: Any, coro: Any, **kwargs: Any) -> Any:
            made.append(coro)
            return asyncio.Task(coro, loop=loop, **kwargs)

        loop.set_task_factory(factory)
        for _ in range(10):
            await rt.poll_once()

    try:
        runs = [rt.start_workflow("two_plain_steps", i) for i in range(6)]
        asyncio.run(drive())
        outputs = [rt.outcome(r).output for r in runs]
    finally:
        rt.close()
    assert outputs == [i + 2 for i in range(6)]
    assert threads
    assert "MainThread" not in threads
    # Twelve bodies ran in the passes; none of them needed a task of its own.
    assert not [c for c in made if "_rest" in getattr(c, "__qualname__", "")]
    assert len(made) < 12, [getattr(c, "__qualname__", c) for c in made]


def test_a_plain_attempt_given_up_while_queued_never_runs_and_is_finished() -> None:
    from types import SimpleNamespace

    from harvest_engine.attempt_cancel import AttemptCancel
    from harvest_engine.runtime.serving import plain_bodies

    gate = threading.Event()
    ran: list[str] = []
    finished: list[str] = []

    def holds(name: str) -> str:
        gate.wait()
        return name

    def runs(name: str) -> str:
        ran.append(name)
        return name

    bodies = {"holds": holds, "runs": runs}
    runner: Any = SimpleNamespace(
        registry=SimpleNamespace(
            activities={n: SimpleNamespace(body=b) for n, b in bodies.items()},
            interceptors=SimpleNamespace(activity=()),
        ),
        attempts=SimpleNamespace(finish=finished.append),
        prepare=lambda task, clock: SimpleNamespace(
            claimed=task.activity_name,
            cancel=AttemptCancel(),
            early=None,
            budget=None,
            args=(task.activity_name,),
        ),
        conclude=lambda prepared, result, clock: result.output,
    )

    def task(name: str) -> Any:
        return SimpleNamespace(activity_name=name, local=False)

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=1))
        busy = plain_bodies.start(runner, task("holds"), lambda: None)
        queued = plain_bodies.start(runner, task("runs"), lambda: None)
        assert busy is not None
        assert queued is not None
        queued.cancel()  # the pass gave it up before a thread took it
        gate.set()
        return await busy

    assert asyncio.run(main()) == "holds"
    assert ran == []
    assert sorted(finished) == ["holds", "runs"]
