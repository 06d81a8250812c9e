"""Rewards: scores for recalls and episodes under the versioned reward specs."""
