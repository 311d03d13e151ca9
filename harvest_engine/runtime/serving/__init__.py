"""Driving and serving: the Driver, the server loop, client commands, group commit, tasks."""
