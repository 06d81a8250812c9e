"""Recall policies: training, judging, the canary and activation."""
