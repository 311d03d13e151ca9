"""The bundled demo: workflows, activities and a schedule a newcomer can watch (no Qt)."""

from __future__ import annotations
