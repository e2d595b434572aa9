"""The sandbox's settings (`referee.settings.SandboxSettings`, the `sandbox` section, names
`REFEREE_SANDBOX_*`) and the lazily imported Docker SDK."""

from __future__ import annotations

import importlib
from typing import Any

from referee.settings import SandboxSettings

__all__ = ["SandboxSettings", "docker_module"]


def docker_module() -> Any:
    """The docker SDK, imported lazily (the service starts without it being used) and typed as
    Any: a `docker/` folder at the repository root would otherwise shadow it for mypy."""
    return importlib.import_module("docker")
