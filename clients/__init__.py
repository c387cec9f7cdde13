"""Clients of policyd: the CLI, the controller and the renderers."""
