"""Docker sandbox for untrusted code."""
