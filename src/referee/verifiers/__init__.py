"""Verifiers: plain Python, never imports FastAPI."""
