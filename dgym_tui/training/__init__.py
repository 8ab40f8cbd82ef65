"""Training data from trajectories: SFT exports and preference pairs."""
