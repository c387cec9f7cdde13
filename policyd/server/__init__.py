"""The gRPC edge: proto in, the decision, proto out — the servicer, the serving state it reads,
answers as messages (responses.py) and as encoded bytes (wire.py), metrics and who may call.
Calls that end without an answer end through policyd/edge/status.py."""
