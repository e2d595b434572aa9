"""Referee on a Ray cluster: the service as a Ray Serve application (`ray_serve`) and a
group rewarder that calls it through a Serve `DeploymentHandle` (`ray_rewarder`).

Needs the `ray` extra (`pip install 'referee[ray]'`). Other packages use only the names below
(enforced by tests/test_layering.py).
"""

from referee.deploy.ray_rewarder import HandleScorer, RayGroupRewarder
from referee.deploy.ray_serve import RefereeDeployment, build_app, get_handle, run

__all__ = [
    "HandleScorer",
    "RayGroupRewarder",
    "RefereeDeployment",
    "build_app",
    "get_handle",
    "run",
]
