"""Domain primitives of OME runtime matching, each defined once."""
