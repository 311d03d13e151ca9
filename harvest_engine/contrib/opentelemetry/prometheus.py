"""prometheus_text: an SDK metric reader's data in Prometheus text exposition format.

For a `/metrics` route without the Prometheus exporter package: give the
`MeterProvider` an `InMemoryMetricReader`, hand that reader to
`MetricsInterceptor`'s provider, and serve ``prometheus_text(reader)``. With
``opentelemetry-exporter-prometheus`` installed, its `PrometheusMetricReader`
plugs into the same provider instead and serves its own endpoint.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.metrics.export import Histogram, MetricsData, Sum

if TYPE_CHECKING:
    from collections.abc import Mapping

    from opentelemetry.sdk.metrics.export import InMemoryMetricReader


def prometheus_text(source: InMemoryMetricReader | MetricsData) -> str:
    """Sums as counters (``_total``) or gauges, histograms as buckets, sum and count."""
    data = source if isinstance(source, MetricsData) else source.get_metrics_data()
    lines: list[str] = []
    if data is None:
        return ""
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                _render(metric.name, metric.description or "", metric.data, lines)
    return "\n".join(lines) + ("\n" if lines else "")


def _render(name: str, description: str, data: Any, lines: list[str]) -> None:
    base = _name(name)
    if isinstance(data, Sum):
        kind = "counter" if data.is_monotonic else "gauge"
        shown = f"{base}_total" if data.is_monotonic else base
        lines.append(f"# HELP {shown} {description}")
        lines.append(f"# TYPE {shown} {kind}")
        for number in data.data_points:
            lines.append(f"{shown}{_labels(number.attributes)} {_num(number.value)}")
    elif isinstance(data, Histogram):
        lines.append(f"# HELP {base} {description}")
        lines.append(f"# TYPE {base} histogram")
        for point in data.data_points:
            running = 0
            bounds = [*point.explicit_bounds, math.inf]
            for bound, count in zip(bounds, point.bucket_counts, strict=False):
                running += count
                le = "+Inf" if math.isinf(bound) else _num(bound)
                labels = _labels(point.attributes, le=le)
                lines.append(f"{base}_bucket{labels} {running}")
            labels = _labels(point.attributes)
            lines.append(f"{base}_sum{labels} {_num(point.sum)}")
            lines.append(f"{base}_count{labels} {point.count}")


def _name(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_:]", "_", name)


def _labels(attributes: Mapping[str, Any] | None, **extra: str) -> str:
    pairs = {**dict(attributes or {}), **extra}
    if not pairs:
        return ""
    inner = ",".join(
        f'{_name(k)}="{_escape(str(v))}"' for k, v in sorted(pairs.items())
    )
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)
