"""Prompt and verifier statistics: the in-memory tracker, its SQLite store, and the periodic
flush that keeps the store up to date (`persisted`)."""

from referee.stats.persistence import persisted
from referee.stats.store import StatsStore
from referee.stats.tracker import Statistics

__all__ = ["Statistics", "StatsStore", "persisted"]
