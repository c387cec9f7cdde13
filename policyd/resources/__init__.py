"""Typed, validated OME objects, parsed from manifests or from the protobuf contract."""
