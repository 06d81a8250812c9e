"""Episodes: recording what agents did, step by step, and reading it back."""
