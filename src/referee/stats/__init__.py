"""Prompt and verifier statistics: the in-memory tracker, its SQLite store, the periodic
flush that keeps the store up to date (`persisted`), and which traffic a verdict counts as
(`counted_as`: audits and registrations apart from training)."""

from referee.stats.buckets import step_start
from referee.stats.persistence import persisted
from referee.stats.store import StatsStore
from referee.stats.tracker import Statistics
from referee.stats.traffic import counted_as

__all__ = ["Statistics", "StatsStore", "counted_as", "persisted", "step_start"]
