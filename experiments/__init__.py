"""Training entry points (docs/training.md)."""
