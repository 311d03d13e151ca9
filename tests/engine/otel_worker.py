"""A serving process for the tracing test: its spans go to a JSON-lines file; CRASH_AT kills it mid-run.

    python -m tests.engine.otel_worker DB SPANS TAG [EXEC_ID]

Serves DB with a TracingInterceptor until EXEC_ID (when given) has ended.
An attempt of `step` whose input equals $CRASH_AT ends the process at once
(os._exit), as a kill -9 would: its span never ends, its task stays claimed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from harvest_engine import (
    ActivityContext,
    ExecutionOutcome,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)
from harvest_engine.contrib.opentelemetry import TracingInterceptor

if TYPE_CHECKING:
    from collections.abc import Sequence

    from opentelemetry.sdk.trace import ReadableSpan


class FileExporter(SpanExporter):
    """Appends each ended span as one JSON line (name, ids, parent, attributes, worker tag)."""

    def __init__(self, path: str, tag: str) -> None:
        self.path = path
        self.tag = tag

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                assert span.context is not None
                record = {
                    "name": span.name,
                    "trace_id": span.context.trace_id,
                    "span_id": span.context.span_id,
                    "parent": span.parent.span_id if span.parent else None,
                    "attrs": dict(span.attributes or {}),
                    "worker": self.tag,
                }
                out.write(json.dumps(record) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release: each export opens and closes the file."""


@activity
def step(ctx: ActivityContext, n: int) -> int:
    if n == int(os.environ.get("CRASH_AT", "-1")):
        os._exit(3)
    return n + 1


@workflow
async def pipeline(ctx: WorkflowContext, n: int) -> int:
    for _ in range(3):
        n = await ctx.execute_activity(step, n)
    return n


async def main(db: str, spans: str, tag: str, exec_id: str | None) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(spans, tag)))
    with SqliteRuntime.open(db, interceptors=[TracingInterceptor(provider)]) as rt:
        rt.register_workflow(pipeline)
        rt.register_activity(step)
        stop = asyncio.Event()
        server = asyncio.create_task(rt.serve(stop, poll_interval="5ms"))
        print("ready", flush=True)
        while exec_id is None or isinstance(  # noqa: ASYNC110 - polls another process's file
            rt.outcome(exec_id), ExecutionOutcome.Running
        ):
            await asyncio.sleep(0.02)
        stop.set()
        await server


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4], sys.argv[4] if len(sys.argv) > 4 else None))
