"""harvest_gui: the desktop inspector for harvest database files (no Qt imported here)."""

from __future__ import annotations

__version__ = "0.1.0"

APP_TITLE = "harvest inspector"
"""The application's display name: the platform appends it to every window title."""

__all__ = ["APP_TITLE", "__version__"]
