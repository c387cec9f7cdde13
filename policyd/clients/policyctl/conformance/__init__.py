"""The conformance runner: executes case directories through the real daemon and renderer."""
