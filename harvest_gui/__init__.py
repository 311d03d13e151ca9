"""harvest_gui: the desktop inspector for harvest database files (no Qt imported here)."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
