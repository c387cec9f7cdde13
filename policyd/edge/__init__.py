"""The edge of a gRPC server: what every call passes before its handler (decoding, who may
call, limits, deadlines, draining). policyd's server and the renderer's serve behind it; it
knows nothing of policy, only the contract's messages."""
