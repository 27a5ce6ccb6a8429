"""The agent loop and what it needs around it (parsing, limits, observations, patch)."""
