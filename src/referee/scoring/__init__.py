"""Transport-free scoring: worker pool, orchestration, group advantages."""
