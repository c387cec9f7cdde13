"""policyd: the runtime-selection policy service for OME-style LLM serving."""

import os

# Set before grpc is first imported: a package's init runs before any of its modules, and the
# clients' package imports this one first. gRPC's C core writes log lines of its own to stderr, in
# a format of its own (`I1205 … ssl_transport_security.cc] Handshake failed …`, `Got goaway`),
# between a daemon's JSON lines; every process logs through its own logger instead. An operator
# debugging gRPC itself sets GRPC_VERBOSITY (and GRPC_TRACE).
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
