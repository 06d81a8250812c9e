"""Learning: reflecting on episodes, mining patterns and evolving skills."""
