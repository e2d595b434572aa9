"""The built-in GRPO loop (needs the `train` extra: torch, matplotlib, tqdm)."""
