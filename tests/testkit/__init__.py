"""What several test suites share: where the shared data lives, and the spec's example objects."""
