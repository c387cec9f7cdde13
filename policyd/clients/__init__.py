"""Clients of policyd: the CLI, the controller and the renderers."""

import policyd  # noqa: F401  # first: gRPC's own log lines off before grpc is imported (policyd/__init__.py)
