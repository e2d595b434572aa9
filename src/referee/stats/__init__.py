"""Prompt and verifier statistics: the in-memory tracker, its SQLite store, the periodic
flush that keeps the store up to date (`persisted`), which traffic a verdict counts as
(`counted_as`: audits and registrations apart from training), and the pages over every
replica through a store they share (`SharedStats`, `ScopedStats`)."""

from referee.stats.buckets import step_start
from referee.stats.persistence import persisted
from referee.stats.scope import ScopedStats, Snapshot
from referee.stats.shared import SharedStats, default_replica_id
from referee.stats.store import StatsStore
from referee.stats.tracker import Statistics
from referee.stats.traffic import counted_as

__all__ = [
    "ScopedStats",
    "SharedStats",
    "Snapshot",
    "Statistics",
    "StatsStore",
    "counted_as",
    "default_replica_id",
    "persisted",
    "step_start",
]
