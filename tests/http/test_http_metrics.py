"""A `/metrics` route beside the API: MetricsInterceptor's counters in Prometheus text, behind the token."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from harvest_engine import SqliteRuntime
from harvest_engine.contrib.opentelemetry import MetricsInterceptor, prometheus_text
from harvest_engine.http import create_app
from tests.http.flows import register
from tests.http.served_api import uvicorn_on_free_port

if TYPE_CHECKING:
    from starlette.requests import Request


async def test_extra_routes_serve_the_metrics_interceptors_counters_behind_the_token() -> (
    None
):
    reader = InMemoryMetricReader()
    counted = MetricsInterceptor(MeterProvider(metric_readers=[reader]))

    async def metrics(request: Request) -> PlainTextResponse:
        return PlainTextResponse(prometheus_text(reader))

    with SqliteRuntime.open_in_memory(interceptors=[counted]) as rt:
        register(rt)
        app = create_app(rt, token="t0k", extra_routes=[Route("/metrics", metrics)])
        async with (
            uvicorn_on_free_port(app) as base,
            httpx.AsyncClient(base_url=base, timeout=10) as http,
        ):
            assert (await http.get("/metrics")).status_code == 401
            auth = {"Authorization": "Bearer t0k"}
            started = await http.post(
                "/api/v1/runs", json={"workflow": "greet", "input": "x"}, headers=auth
            )
            await rt.run_until_blocked(started.json()["exec_id"])
            scraped = await http.get("/metrics", headers=auth)
            assert scraped.status_code == 200
            assert scraped.headers["content-type"].startswith("text/plain")
            lines = scraped.text.splitlines()
            assert 'harvest_runs_started_total{workflow="greet"} 1' in lines
            assert (
                'harvest_runs_closed_total{state="COMPLETED",workflow="greet"} 1'
                in lines
            )
