"""Pure scoring functions (no I/O)."""
