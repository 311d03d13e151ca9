"""The route table: every endpoint of the API, in the order the OpenAPI document lists them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.http import (
    flow_routes,
    repair_routes,
    run_commands,
    run_progress,
    run_reads,
    schedule_routes,
    service_routes,
)

if TYPE_CHECKING:
    from harvest_engine.http.table import Endpoint

ENDPOINTS: tuple[Endpoint, ...] = (
    *service_routes.ENDPOINTS,
    *run_reads.ENDPOINTS,
    *run_commands.ENDPOINTS,
    *repair_routes.ENDPOINTS,
    *run_progress.ENDPOINTS,
    *schedule_routes.ENDPOINTS,
    *flow_routes.ENDPOINTS,
)
"""Every route of the API (app.py serves them, openapi.py documents them)."""
