"""Reward adapters for trainers (TRL, verl, a generic group rewarder) and the built-in GRPO loop.
OpenRLHF's remote reward protocol is a route of the service instead (`referee.service.openrlhf`);
`openrlhf` is the reward file OpenRLHF can load to reach that route with the client's patience.

They reach the service only over HTTP, through `referee.client`. Other packages use only the
names below (enforced by tests/test_layering.py); `trl`, `verl` and `grpo` are imported by
their full module path, since trainers load them by that path.
"""

from referee.trainer_adapter import verl
from referee.trainer_adapter.connections import register_scheme
from referee.trainer_adapter.rewarder import GroupRewarder, GroupRewards, GroupScorer

# `verl` is exported for `referee.deploy.verl_reward`, which serves its functions over a Ray
# Serve handle (`register_scheme("ray", ...)`).
__all__ = ["GroupRewarder", "GroupRewards", "GroupScorer", "register_scheme", "verl"]
