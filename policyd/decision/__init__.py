"""Pure, deterministic decisions: select, explain, resolve, effective modes."""
