"""Shaping options: the input cap per workflow, bad values at registration, client starts, a property."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harvest_engine
from harvest_engine import (
    Batch,
    ExecutionOutcome,
    InvalidFlowOption,
    ManualClock,
    PayloadTooLarge,
    Queue,
    SqliteRuntime,
    WorkflowContext,
    workflow,
)
from harvest_engine.shaping import MAX_INPUT_BYTES_CEILING
from tests.engine.served_store import ServedStore, served_store

Open = Callable[..., SqliteRuntime]


@workflow(max_input_bytes=3 * 1024 * 1024)
async def big(ctx: WorkflowContext, blob: str) -> int:
    return len(blob)


@workflow(max_input_bytes=100)
async def small(ctx: WorkflowContext, blob: str) -> int:
    return len(blob)


async def test_max_input_bytes_raises_the_start_input_cap(open_rt: Open) -> None:
    rt = open_rt()
    rt.register_workflow(big)
    blob = "x" * (2 * 1024 * 1024 + 10)  # over the default 2 MiB cap
    exec_id = rt.start_workflow("big", blob)
    await rt.run_until_idle()
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=len(blob))
    with pytest.raises(PayloadTooLarge):
        rt.start_workflow_with_id("big", "b", "z" * (3 * 1024 * 1024 + 1))
    counts = rt.counts_by_state()  # the refused start wrote nothing
    assert (counts["COMPLETED"], sum(counts.values())) == (1, 1)


async def test_max_input_bytes_lowers_the_cap_and_a_refused_start_writes_nothing(
    open_rt: Open,
) -> None:
    rt = open_rt()
    rt.register_workflow(small)
    with pytest.raises(PayloadTooLarge) as refused:
        rt.start_workflow_with_id("small", "s", "y" * 200)
    assert refused.value.limit == 100  # type: ignore[attr-defined]
    assert sum(rt.counts_by_state().values()) == 0
    exec_id = rt.start_workflow("small", "y" * 90)
    await rt.run_until_idle()
    assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=90)


@pytest.mark.parametrize(
    "options",
    [
        {"debounce": 0},
        {"debounce": "-1s"},
        {"debounce": "soon"},
        {"batch": 5},
        {"batch": Batch(2, "1s"), "debounce": "1s"},
        {"max_input_bytes": 0},
        {"max_input_bytes": MAX_INPUT_BYTES_CEILING + 1},
        {"max_input_bytes": "big"},
    ],
)
def test_bad_shaping_values_are_refused_at_registration(
    options: dict[str, Any],
) -> None:
    @workflow(name="shaped", **options)
    async def shaped(ctx: WorkflowContext, _: Any) -> None:
        return None

    with SqliteRuntime.open_in_memory() as rt:  # registration touches no store
        with pytest.raises(InvalidFlowOption):
            rt.register_workflow(shaped)
        assert "shaped" not in rt.registry.workflows


@pytest.mark.parametrize("make", [lambda: Batch(0, "1s"), lambda: Batch(2, 0)])
def test_bad_batch_values_are_typed_errors(make: Callable[[], Any]) -> None:
    with pytest.raises(InvalidFlowOption):
        make()


@workflow(debounce="300ms", name="typing")
async def typing_(ctx: WorkflowContext, text: str) -> str:
    return text


@workflow(batch=Batch(max_size=10, max_wait="300ms"), name="mailbag")
async def mailbag(ctx: WorkflowContext, items: list[int]) -> list[int]:
    return items


@pytest.fixture(params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[ServedStore]:
    yield from served_store(request, tmp_path, clock)


def _pass_windows(served: ServedStore, clock: ManualClock) -> None:
    """Move the serving engine's clock past every window, and wake it."""
    clock.advance(timedelta(seconds=1))
    served.rt.waker.wake()


async def test_client_starts_are_debounced_and_batched_by_the_server(
    served: ServedStore, clock: ManualClock
) -> None:
    served.rt.register_workflow(typing_)
    served.rt.register_workflow(mailbag)
    with served.client() as client:
        async with served.serving():
            typed = [
                await client.start_workflow_with_id("typing", "doc", text)
                for text in ("h", "he", "hel")
            ]
            bagged = [await client.start_workflow("mailbag", n) for n in (1, 2, 3)]
            assert len(set(typed)) == 1
            assert len(set(bagged)) == 1
            # The caller waits on the id of the run to be; the server starts it
            # once the window closes (it sleeps until then: next_wakeup).
            _pass_windows(served, clock)
            done = await client.result(typed[0], timeout=10)
            bag = await client.result(bagged[0], timeout=10)
    assert done == ExecutionOutcome.Completed(output="hel")
    assert bag == ExecutionOutcome.Completed(output=[1, 2, 3])


async def test_the_server_applies_the_workflows_cap_to_a_client_start(
    tmp_path: Path, clock: ManualClock
) -> None:
    served = ServedStore(str(tmp_path / "caps.db"), postgres=False, clock=clock)
    served.rt.register_workflow(small)
    try:
        with served.client() as client:
            async with served.serving():
                with pytest.raises(PayloadTooLarge) as refused:
                    await client.start_workflow("small", "y" * 200)
        assert refused.value.limit == 100  # type: ignore[attr-defined]
        assert sum(served.rt.counts_by_state().values()) == 0
    finally:
        served.rt.close()


def _harvest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harvest_engine", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])),
        timeout=60,
    )


async def test_cli_starts_are_debounced_and_its_result_waits_for_the_run(
    tmp_path: Path, clock: ManualClock
) -> None:
    # On a file only: the CLI goes through the client, whose starts run on
    # both stores above, and each CLI process costs a second.
    served = ServedStore(str(tmp_path / "cli.db"), postgres=False, clock=clock)
    served.rt.register_workflow(typing_)
    async with served.serving():
        ids = []
        for text in ('"a"', '"ab"'):
            done = await asyncio.to_thread(
                _harvest, "start", served.where, "typing", text, "--id", "doc"
            )
            assert done.returncode == 0, done.stderr
            ids.append(done.stdout.strip())
        assert ids[0] == ids[1]
        _pass_windows(served, clock)
        result = await asyncio.to_thread(
            _harvest, "result", served.where, ids[0], "--timeout", "20s"
        )
    served.rt.close()
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == "ab"


# -- property: any arrival sequence gives the runs a model predicts -----------------

_arrivals = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 40)), min_size=1, max_size=12
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrivals=_arrivals)
def test_debounce_and_batch_match_a_model_for_any_arrivals(
    arrivals: list[tuple[int, int]],
) -> None:
    asyncio.run(_check_model(arrivals))


@workflow(debounce="10s", name="deb")
async def deb(ctx: WorkflowContext, value: Any) -> Any:
    return value


@workflow(batch=Batch(max_size=3, max_wait="25s"), name="bat")
async def bat(ctx: WorkflowContext, value: Any) -> Any:
    return value


async def _check_model(arrivals: list[tuple[int, int]]) -> None:
    clock = ManualClock()
    rt = SqliteRuntime.open_in_memory(clock=clock)
    try:
        rt.register_workflow(deb)
        rt.register_workflow(bat)
        debounced: dict[str, list[Any]] = {}  # exec id -> inputs it got
        batched: dict[str, list[Any]] = {}
        for n, (key, gap) in enumerate(arrivals):
            clock.advance(timedelta(seconds=gap))
            await rt.run_until_idle()  # what came due meanwhile starts first
            debounced.setdefault(
                str(rt.start_workflow_with_id("deb", f"k{key}", n)), []
            ).append(n)
            batched.setdefault(str(rt.start_workflow("bat", n)), []).append(n)
        clock.advance(timedelta(minutes=1))
        await rt.run_until_idle()
        # The model: a debounce window closes 10 s after its last start; a new
        # start after that opens a new one. A batch closes at 3 inputs or 25 s.
        expected_deb = _model_debounce(arrivals)
        assert sorted(debounced.values()) == sorted(expected_deb)
        for exec_id, inputs in debounced.items():
            out = rt.outcome(exec_id)
            assert out == ExecutionOutcome.Completed(output=inputs[-1])
        assert sorted(batched.values()) == sorted(_model_batch(arrivals))
        for exec_id, inputs in batched.items():
            assert rt.outcome(exec_id) == ExecutionOutcome.Completed(output=inputs)
        assert rt.held_starts() == []
    finally:
        rt.close()


def _model_debounce(arrivals: list[tuple[int, int]]) -> list[list[int]]:
    t = 0
    open_: dict[int, tuple[int, list[int]]] = {}  # key -> (due, inputs)
    closed: list[list[int]] = []
    for n, (key, gap) in enumerate(arrivals):
        t += gap
        for k, (due, inputs) in list(open_.items()):
            if due <= t:
                closed.append(inputs)
                del open_[k]
        _, inputs = open_.get(key, (0, []))
        open_[key] = (t + 10, [*inputs, n])
    return closed + [inputs for _, inputs in open_.values()]


def _model_batch(arrivals: list[tuple[int, int]]) -> list[list[int]]:
    t = 0
    current: tuple[int, list[int]] | None = None  # (due, inputs)
    closed: list[list[int]] = []
    for n, (_, gap) in enumerate(arrivals):
        t += gap
        if current is not None and current[0] <= t:
            closed.append(current[1])
            current = None
        if current is None:
            current = (t + 25, [])
        current[1].append(n)
        if len(current[1]) == 3:
            closed.append(current[1])
            current = None
    return closed + ([current[1]] if current is not None else [])


def test_one_error_class_answers_every_bad_flow_option() -> None:
    # InvalidFlowControl (queues, rates, start options) and InvalidFlowOption
    # (shaping, breakers) were two classes for one idea; the old name stays.
    assert harvest_engine.InvalidFlowControl is InvalidFlowOption
    assert harvest_engine.errors.InvalidFlowControl is InvalidFlowOption
    refused: list[InvalidFlowOption] = []
    for bad in (lambda: Queue("q", concurrency=0), lambda: Batch(0, "1s")):
        with pytest.raises(harvest_engine.InvalidFlowControl) as caught:
            bad()
        refused.append(caught.value)
    assert [(e.option, e.owner) for e in refused] == [  # type: ignore[attr-defined]
        ("Queue.concurrency", None),
        ("max_size", "Batch"),
    ]
    assert str(refused[0]) == "Queue.concurrency: must be positive, got 0"
    again = pickle.loads(pickle.dumps(refused[1]))
    assert (type(again), str(again)) == (InvalidFlowOption, str(refused[1]))
