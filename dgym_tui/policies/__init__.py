"""Who chooses actions: LLM agents, the human policy, the solution policy."""
