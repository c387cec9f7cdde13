"""Unit tests of policyd's pure logic, named after the OME rule each one checks."""
