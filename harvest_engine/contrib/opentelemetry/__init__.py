"""OpenTelemetry for harvest (extra ``harvest[otel]``): spans and metrics as interceptors.

`TracingInterceptor` makes spans around starts, decisions, activity
attempts, signals, updates, queries and client commands, continuing the
trace across processes through W3C ``traceparent`` headers stored with the
run. `MetricsInterceptor` counts runs and attempts and times decisions.
Both use the provider given, else the global one the app set.
`prometheus_text` renders an SDK reader's metrics in Prometheus text.
"""

from __future__ import annotations

from harvest_engine.contrib.opentelemetry.metrics import MetricsInterceptor
from harvest_engine.contrib.opentelemetry.prometheus import prometheus_text
from harvest_engine.contrib.opentelemetry.tracing import TracingInterceptor

__all__ = ["MetricsInterceptor", "TracingInterceptor", "prometheus_text"]
