"""The HTTP service: the only package that imports FastAPI."""

from referee.service.app import create_app

__all__ = ["create_app"]
