"""Widgets of the w2c-tui app, one per module."""
