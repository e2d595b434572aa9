"""Reward adapters for trainers and the built-in GRPO loop."""
