"""policyctl: the command-line client of policyd."""

import os

# before grpc is first imported: its C core's own log lines (a failed TLS handshake, an unusable
# key) are not the user's to read; policyctl says what went wrong in one line of its own
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
