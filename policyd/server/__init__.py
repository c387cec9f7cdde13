"""The gRPC edge: translate proto ⇄ domain and errors ⇄ status codes, nothing more."""
