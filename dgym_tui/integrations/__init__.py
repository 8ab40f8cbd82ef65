"""RepoEnv inside other frameworks (a Ray actor for RL trainers)."""
