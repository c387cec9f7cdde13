"""Immutable, versioned snapshots of the runtimes and models policyd decides over."""
