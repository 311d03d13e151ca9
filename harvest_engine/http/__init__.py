"""The management HTTP API: `create_app(target)` serves a harvest store's runs as JSON (needs `harvest[http]`)."""

from __future__ import annotations

from harvest_engine.http.app import create_app

__all__ = ["create_app"]
