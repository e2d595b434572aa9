"""Referee: verdicts that are right, bounded in time and cheap, for RL on language models."""

__version__ = "0.1.0"
