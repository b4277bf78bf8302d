"""Helpers for tests and benchmarks (never imported by the app): synthetic sessions on disk."""
