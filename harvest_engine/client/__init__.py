"""Clients of a served harvest file in other processes (HarvestClient)."""

from harvest_engine.client.client import HarvestClient

__all__ = ["HarvestClient"]
