"""policyctl: the command-line client of policyd."""
