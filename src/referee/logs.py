"""Logging set-up (structlog), shared by the CLI and the app factory."""

from __future__ import annotations

import logging
from typing import Any

import structlog


def configure_logging(level: str = "info", json_logs: bool = False) -> None:
    # Plain tracebacks: structlog's default rich tracebacks print local variables, which hold
    # request bodies and Authorization headers.
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json_logs
        else structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
    )
    processors: list[Any] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
    ]
    if json_logs:
        processors.append(structlog.processors.format_exc_info)
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
    )


def ensure_logging(level: str = "info", json_logs: bool = False) -> None:
    """Configure logging unless the embedding application already did."""
    if not structlog.is_configured():
        configure_logging(level, json_logs)
