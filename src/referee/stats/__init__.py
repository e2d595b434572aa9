"""Prompt and verifier statistics: the in-memory tracker and its SQLite store."""

from referee.stats.store import StatsStore
from referee.stats.tracker import Statistics

__all__ = ["Statistics", "StatsStore"]
