"""The runtime: the Runtime facade, its openers, the Engine and its four wings.

Imports point one way: openers (sqlite_runtime, postgres_runtime) -> the
facade (runtime) -> serving -> operating -> talking -> engine -> deciding ->
parts (registry, settings, schema, cache, waker).
"""
