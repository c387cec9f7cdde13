"""Generated gRPC contract of policyd (proto/ome/policy/v1). Do not edit."""
