"""What every long-running process of policyd and its clients shares: a gRPC server's life
(binding, health, readiness, stopping on a signal), TLS that follows its files, the log format,
the heap given back after loading, and how a process ends."""
