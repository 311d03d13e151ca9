"""TracingInterceptor: OpenTelemetry spans around harvest's calls, one trace across processes.

A client command's span (`ClientCommand:<kind>`) writes its context into the
command's headers; the serving process continues it in `StartWorkflow:<name>`,
whose context is stored with the run. Every decision (`RunWorkflow:<name>`)
continues the run's stored context and hands its own to the activities it
schedules, so each attempt (`RunActivity:<name>`) is a child of the decision
that scheduled it, in whichever process, before or after a restart. A run
sealed outside its own decision (a terminate, a cancel of a queued run, a
reset, a timeout, its parent's close) gets a last `RunWorkflow:<name>` span
with its state, linked to the call that sealed it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeVar

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import (
    TraceContextTextMapPropagator,
)

from harvest_engine.interceptors import (
    ActivityCall,
    ClientCommandCall,
    DecisionCall,
    DecisionResult,
    Interceptor,
    QueryCall,
    RunClosedCall,
    SignalCall,
    StartCall,
    UpdateCall,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from contextlib import AbstractContextManager

    from opentelemetry.context import Context

    from harvest_engine.activity import AttemptResult

R = TypeVar("R")

_W3C = TraceContextTextMapPropagator()
# An attribute holding a payload is cut to this many characters.
PAYLOAD_CHARS = 4096


class TracingInterceptor(Interceptor):
    """Spans for starts, decisions, attempts, signals, updates, queries and client commands.

    Args:
        tracer_provider: the provider to make spans with; None uses the
            global one (`trace.set_tracer_provider`), looked up at each span,
            so a provider the app sets later is respected.
        record_payloads: also record inputs and outputs as span attributes
            (``harvest.input`` / ``harvest.output``, JSON cut to 4096
            characters). Off by default: payloads may hold private data.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        record_payloads: bool = False,
    ) -> None:
        self._tracer = trace.get_tracer(
            "harvest_engine", tracer_provider=tracer_provider
        )
        self.record_payloads = record_payloads

    # -- runtime side ------------------------------------------------------------

    def start(self, call: StartCall, proceed: Callable[[StartCall], R]) -> R:
        """A `StartWorkflow:<name>` span; its context goes into the headers stored with the run."""
        attrs = {"harvest.workflow_name": call.workflow_name}
        if call.workflow_id:
            attrs["harvest.workflow_id"] = call.workflow_id
        with self._span(
            f"StartWorkflow:{call.workflow_name}",
            call.headers,
            attrs,
            SpanKind.PRODUCER,
        ) as span:
            _W3C.inject(call.headers)
            self._payload(span, "harvest.input", call.input)
            result = proceed(call)
            exec_id = getattr(result, "exec_id", result)
            span.set_attribute("harvest.run_id", str(exec_id))
            return result

    def decision(
        self,
        call: DecisionCall,
        proceed: Callable[[DecisionCall], DecisionResult],
    ) -> DecisionResult:
        """A `RunWorkflow:<name>` span continuing the run's start; its context goes to what it schedules."""
        attrs: dict[str, str | int | bool] = {
            "harvest.run_id": call.exec_id,
            "harvest.workflow_id": call.workflow_id,
            "harvest.workflow_name": call.workflow_name,
            "harvest.attempt": call.attempt,
            "harvest.first_decision": call.first,
        }
        # Signals this decision may deliver link to the spans that sent them.
        links = [_link(headers) for headers in call.signal_headers]
        with self._span(
            f"RunWorkflow:{call.workflow_name}",
            call.headers,
            attrs,
            SpanKind.INTERNAL,
            links=[link for link in links if link is not None],
        ) as span:
            _W3C.inject(call.outbound)
            result = proceed(call)
            if result.state is not None:
                span.set_attribute("harvest.state", result.state)
            return result

    def run_closed(self, call: RunClosedCall) -> None:
        """A `RunWorkflow:<name>` span with the state of a run sealed outside its decision.

        Its parent is the run's start, as every decision's; it links to the
        span of the call that sealed it (a client's `ClientCommand:terminate`,
        a parent's decision). A run its own decision ended is already marked
        by that decision's span.
        """
        if call.decided:
            return
        attrs: dict[str, str | int | bool] = {
            "harvest.run_id": call.exec_id,
            "harvest.workflow_id": call.workflow_id,
            "harvest.workflow_name": call.workflow_name,
            "harvest.state": call.state,
        }
        cause = _link(call.cause)
        self._tracer.start_span(
            f"RunWorkflow:{call.workflow_name}",
            context=_parent(call.headers),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            links=None if cause is None else [cause],
        ).end()

    async def activity(
        self,
        call: ActivityCall,
        proceed: Callable[[ActivityCall], Awaitable[AttemptResult]],
    ) -> AttemptResult:
        """A `RunActivity:<name>` span continuing the decision that scheduled the activity."""
        attrs: dict[str, str | int | bool] = {
            "harvest.run_id": call.exec_id,
            "harvest.workflow_name": call.workflow_name,
            "harvest.activity_name": call.activity_name,
            "harvest.activity_id": call.activity_id,
            "harvest.attempt": call.attempt,
        }
        with self._span(
            f"RunActivity:{call.activity_name}", call.headers, attrs, SpanKind.CONSUMER
        ) as span:
            self._payload(span, "harvest.input", call.input)
            result = await proceed(call)
            if result.ok:
                self._payload(span, "harvest.output", result.output)
            else:
                error = result.error
                message = "" if error is None else f"{error.type}: {error.message}"
                span.set_attribute(
                    "harvest.outcome", "TIMED_OUT" if result.timed_out else "FAILED"
                )
                span.set_status(Status(StatusCode.ERROR, message))
            return result

    def signal(self, call: SignalCall, proceed: Callable[[SignalCall], R]) -> R:
        """A `SignalWorkflow:<name>` span."""
        attrs = {"harvest.signal_name": call.name}
        if call.exec_id:
            attrs["harvest.run_id"] = call.exec_id
        if call.workflow_id:
            attrs["harvest.workflow_id"] = call.workflow_id
        with self._span(
            f"SignalWorkflow:{call.name}", call.headers, attrs, SpanKind.PRODUCER
        ) as span:
            _W3C.inject(call.headers)
            self._payload(span, "harvest.input", call.payload)
            return proceed(call)

    def update(self, call: UpdateCall, proceed: Callable[[UpdateCall], R]) -> R:
        """A `HandleUpdate:<name>` span."""
        attrs = {"harvest.run_id": call.exec_id, "harvest.update_name": call.name}
        with self._span(
            f"HandleUpdate:{call.name}", call.headers, attrs, SpanKind.SERVER
        ) as span:
            _W3C.inject(call.headers)
            self._payload(span, "harvest.input", call.arg)
            result = proceed(call)
            self._payload(span, "harvest.output", result)
            return result

    def query(self, call: QueryCall, proceed: Callable[[QueryCall], R]) -> R:
        """A `HandleQuery:<name>` span."""
        attrs = {"harvest.run_id": call.exec_id, "harvest.query_name": call.name}
        with self._span(
            f"HandleQuery:{call.name}", call.headers, attrs, SpanKind.SERVER
        ) as span:
            self._payload(span, "harvest.input", call.arg)
            result = proceed(call)
            self._payload(span, "harvest.output", result)
            return result

    # -- client side -------------------------------------------------------------

    async def client_command(
        self,
        call: ClientCommandCall,
        proceed: Callable[[ClientCommandCall], Awaitable[R]],
    ) -> R:
        """A `ClientCommand:<kind>` span; its context travels in the command's headers."""
        attrs = {"harvest.command": call.kind}
        for key, attr in _COMMAND_ATTRS.items():
            value = call.args.get(key)
            if isinstance(value, str) and value:
                attrs[attr] = value
        with self._span(
            f"ClientCommand:{call.kind}", call.headers, attrs, SpanKind.CLIENT
        ):
            _W3C.inject(call.headers)
            return await proceed(call)

    # -- parts -------------------------------------------------------------------

    def _span(
        self,
        name: str,
        headers: Mapping[str, str],
        attrs: Mapping[str, str | int | bool],
        kind: SpanKind,
        links: list[trace.Link] | None = None,
    ) -> AbstractContextManager[trace.Span]:
        """A current span continuing `headers`' trace (else the current context's)."""
        return self._tracer.start_as_current_span(
            name,
            context=_parent(headers),
            kind=kind,
            attributes=dict(attrs),
            links=links,
        )

    def _payload(self, span: trace.Span, key: str, value: Any) -> None:
        if not self.record_payloads:
            return
        try:
            text = json.dumps(value, default=str)
        except (TypeError, ValueError):
            text = repr(value)
        span.set_attribute(key, text[:PAYLOAD_CHARS])


_COMMAND_ATTRS = {
    "exec_id": "harvest.run_id",
    "workflow_id": "harvest.workflow_id",
    "name": "harvest.name",
    "workflow_name": "harvest.workflow_name",
}


def _link(headers: Mapping[str, str]) -> trace.Link | None:
    """A link to the span whose context `headers` carry, or None."""
    parent = _parent(headers)
    if parent is None:
        return None
    context = trace.get_current_span(parent).get_span_context()
    return trace.Link(context) if context.is_valid else None


def _parent(headers: Mapping[str, str]) -> Context | None:
    """The context a `traceparent` header carries; None (the current one) without it."""
    if "traceparent" not in headers:
        return None
    return _W3C.extract(dict(headers))
