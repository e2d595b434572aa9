"""The HTTP service: the only package that imports FastAPI.

Other packages use only the names below (enforced by tests/test_layering.py).
"""

from referee.service.app import create_app
from referee.service.background import BackgroundServer

__all__ = ["BackgroundServer", "create_app"]
