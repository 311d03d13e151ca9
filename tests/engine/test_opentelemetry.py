"""OpenTelemetry: one trace from a web handler through a worker crash and restart; metrics by outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from harvest_engine import (
    ActivityContext,
    ApplicationError,
    ExecutionOutcome,
    HarvestClient,
    Queue,
    RetryPolicy,
    RunState,
    SqliteRuntime,
    StartOptions,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.contrib.opentelemetry import (
    MetricsInterceptor,
    TracingInterceptor,
    prometheus_text,
)

if TYPE_CHECKING:
    from harvest_engine import ManualClock

pytestmark = pytest.mark.sqlite_only("one traced file served by real subprocesses")

ROOT = Path(__file__).resolve().parents[2]


def worker(
    db: Path, spans: Path, tag: str, *args: str, crash_at: int | None = None
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CRASH_AT", None)
    if crash_at is not None:
        env["CRASH_AT"] = str(crash_at)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.engine.otel_worker",
            str(db),
            str(spans),
            tag,
            *args,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def file_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_one_trace_from_a_client_start_through_a_worker_restart(
    tmp_path: Path,
) -> None:
    db, spans_file = tmp_path / "traced.db", tmp_path / "spans.jsonl"
    SqliteRuntime.open(db).close()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    first = worker(db, spans_file, "w1", crash_at=1)
    procs = [first]
    try:
        with HarvestClient.open(
            db, interceptors=[TracingInterceptor(provider)]
        ) as client:
            # The web handler's span: the trace every later span continues.
            with provider.get_tracer("web").start_as_current_span("POST /pipelines"):
                exec_id = str(await client.start_workflow("pipeline", 0, timeout="30s"))
            # The worker dies in the second activity's body (os._exit).
            assert first.wait(timeout=60) == 3
            second = worker(db, spans_file, "w2", exec_id)
            procs.append(second)
            assert second.wait(timeout=60) == 0
            assert client.outcome(exec_id) == ExecutionOutcome.Completed(output=3)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()

    here = [
        {
            "name": s.name,
            "trace_id": s.context.trace_id,
            "span_id": s.context.span_id,
            "parent": s.parent.span_id if s.parent else None,
            "attrs": dict(s.attributes or {}),
            "worker": "client",
        }
        for s in exporter.get_finished_spans()
        if s.context is not None
    ]
    spans = here + file_spans(spans_file)
    by_id = {s["span_id"]: s for s in spans}
    (web,) = [s for s in spans if s["name"] == "POST /pipelines"]
    assert {s["trace_id"] for s in spans} == {web["trace_id"]}

    def parent(span: dict[str, Any]) -> dict[str, Any]:
        return by_id[span["parent"]]

    (command,) = [s for s in spans if s["name"] == "ClientCommand:start_workflow"]
    assert parent(command) is web
    (start,) = [s for s in spans if s["name"] == "StartWorkflow:pipeline"]
    assert parent(start) is command
    assert start["worker"] == "w1"
    assert start["attrs"]["harvest.run_id"] == exec_id
    decisions = [s for s in spans if s["name"] == "RunWorkflow:pipeline"]
    assert {d["worker"] for d in decisions} == {
        "w1",
        "w2",
    }  # before and after the restart
    assert all(parent(d) is start for d in decisions)
    assert all(d["attrs"]["harvest.run_id"] == exec_id for d in decisions)
    attempts = [s for s in spans if s["name"] == "RunActivity:step"]
    # Step 0 ran on w1; step 1 died there (no span) and ran again on w2 with step 2.
    assert [(a["worker"], a["attrs"]["harvest.activity_id"]) for a in attempts] == [
        ("w1", 1),
        ("w2", 2),
        ("w2", 3),
    ]
    for attempt in attempts:
        assert parent(attempt)["name"] == "RunWorkflow:pipeline"
    last = attempts[-1]
    assert parent(last)["worker"] == "w2"
    assert parent(parent(last)) is start
    closing = [d for d in decisions if d["attrs"].get("harvest.state") == "COMPLETED"]
    assert len(closing) == 1
    assert closing[0]["worker"] == "w2"


@activity(retry=RetryPolicy(max_attempts=2, initial_interval="1s"))
async def flaky(ctx: ActivityContext, x: int) -> int:
    if ctx.info().attempt == 1:
        raise ApplicationError("first attempt fails")
    return x * 10


@workflow
async def measured(ctx: WorkflowContext, x: int) -> int:
    return await ctx.execute_activity(flaky, x)


async def test_metrics_count_runs_attempts_and_time_decisions(
    db_path: Path, clock: ManualClock
) -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    exporter = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    interceptors = [
        MetricsInterceptor(meters),
        TracingInterceptor(tracers, record_payloads=True),
    ]
    with SqliteRuntime.open(db_path, clock=clock, interceptors=interceptors) as rt:
        rt.register_workflow(measured)
        rt.register_activity(flaky)
        exec_id = rt.start_workflow("measured", 4)
        state = await rt.run_until_blocked(exec_id)
        clock.advance(2)
        state = await rt.run_until_blocked(exec_id)
        assert isinstance(state, RunState.Completed)
    points: dict[str, dict[tuple[tuple[str, Any], ...], Any]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for metric in data.resource_metrics[0].scope_metrics[0].metrics:
        for point in metric.data.data_points:
            key = tuple(sorted((point.attributes or {}).items()))
            points.setdefault(metric.name, {})[key] = point
    assert points["harvest.runs.started"][(("workflow", "measured"),)].value == 1
    closed = points["harvest.runs.closed"]
    assert closed[(("state", "COMPLETED"), ("workflow", "measured"))].value == 1
    attempts = points["harvest.activity.attempts"]
    assert attempts[(("activity", "flaky"), ("outcome", "FAILED"))].value == 1
    assert attempts[(("activity", "flaky"), ("outcome", "COMPLETED"))].value == 1
    waits = points["harvest.activity.schedule_to_start"][(("activity", "flaky"),)]
    assert waits.count == 2
    assert points["harvest.decision.duration"][(("workflow", "measured"),)].count >= 2
    text = prometheus_text(reader)
    assert (
        'harvest_activity_attempts_total{activity="flaky",outcome="FAILED"} 1' in text
    )
    assert "# TYPE harvest_decision_duration histogram" in text
    assert 'harvest_decision_duration_bucket{le="+Inf",workflow="measured"}' in text
    # Opt-in payloads: the attempt spans carry input and output; the failed one is an error.
    runs = [s for s in exporter.get_finished_spans() if s.name == "RunActivity:flaky"]
    assert [s.attributes["harvest.input"] for s in runs if s.attributes] == ["4", "4"]
    assert runs[0].status.status_code.name == "ERROR"
    assert runs[1].attributes is not None
    assert runs[1].attributes["harvest.output"] == "40"


async def test_queue_depth_is_read_from_the_queues_at_each_collection(
    db_path: Path, clock: ManualClock
) -> None:
    reader = InMemoryMetricReader()
    metrics_hooks = MetricsInterceptor(MeterProvider(metric_readers=[reader]))
    with SqliteRuntime.open(db_path, clock=clock, interceptors=[metrics_hooks]) as rt:
        rt.register_workflow(measured)
        rt.register_activity(flaky)
        rt.register_queue(Queue("narrow", concurrency=1))
        metrics_hooks.observe_queues(rt.queues)
        for x in (1, 2, 3):
            rt.start_workflow_with_options("measured", x, StartOptions(queue="narrow"))
        await rt.poll_once()
        data = reader.get_metrics_data()
    assert data is not None
    depth = {
        tuple(sorted((point.attributes or {}).items())): point.value
        for metric in data.resource_metrics[0].scope_metrics[0].metrics
        if metric.name == "harvest.queue.depth"
        for point in metric.data.data_points
    }
    assert depth == {
        (("kind", "waiting"), ("queue", "narrow")): 2,
        (("kind", "running"), ("queue", "narrow")): 1,
    }


async def test_the_global_provider_is_used_when_none_is_given(
    db_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry import trace

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    with SqliteRuntime.open(
        db_path, clock=clock, interceptors=[TracingInterceptor()]
    ) as rt:
        rt.register_workflow(measured)
        rt.register_activity(flaky)
        rt.start_workflow("measured", 1)
    assert [s.name for s in exporter.get_finished_spans()] == ["StartWorkflow:measured"]


@workflow
async def waiter(ctx: WorkflowContext, _: None) -> str:
    return str(await ctx.wait_for_signal("go"))


async def test_a_decision_links_to_the_signals_it_delivers(
    db_path: Path, clock: ManualClock
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = [TracingInterceptor(provider)]
    with SqliteRuntime.open(db_path, clock=clock, interceptors=tracing) as rt:
        rt.register_workflow(waiter)
        exec_id = rt.start_workflow("waiter", None)
        await rt.run_until_blocked(exec_id)
        with provider.get_tracer("web").start_as_current_span("POST /go"):
            rt.send_signal(exec_id, "go", "now")
    with SqliteRuntime.open(db_path, clock=clock, interceptors=tracing) as rt:
        rt.register_workflow(waiter)  # after a reopen: the link comes from the store
        assert isinstance(await rt.run_until_blocked(exec_id), RunState.Completed)
    spans = exporter.get_finished_spans()
    (sent,) = [s for s in spans if s.name == "SignalWorkflow:go"]
    last = [s for s in spans if s.name == "RunWorkflow:waiter"][-1]
    assert sent.context is not None
    assert [link.context.span_id for link in last.links] == [sent.context.span_id]
