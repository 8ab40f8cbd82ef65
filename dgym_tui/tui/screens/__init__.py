"""Screens of the dgym-tui app (modal dialogs)."""
