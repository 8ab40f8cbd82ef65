"""One episode: its records, the policy protocol, the turn loop and its trajectory file."""
