"""What-if: Simulate (what a proposed change would do to every decision) and Lint (findings about the catalog)."""
