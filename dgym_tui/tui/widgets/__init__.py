"""Widgets of the dgym-tui app."""
