"""Transport-free scoring: the killable worker pool and the engine that validates, dispatches
and assembles verdicts and group results.

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.scoring.admission import Admission, BackgroundOwner, BackgroundShare, LaneOverloaded
from referee.scoring.engine import Scorer
from referee.scoring.pool import PoolOverloaded, TaskOutcome, WorkerPool

__all__ = [
    "Admission",
    "BackgroundOwner",
    "BackgroundShare",
    "LaneOverloaded",
    "PoolOverloaded",
    "Scorer",
    "TaskOutcome",
    "WorkerPool",
]
