"""Flat fact records the rules test: one per (request, runtime, supportedModelFormats entry)."""
