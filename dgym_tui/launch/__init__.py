"""Task or trajectory to a session: the one assembly path (open, replay, fork)."""
