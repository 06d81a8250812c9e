"""Recall: what an agent should remember now, chosen by a policy and logged."""
