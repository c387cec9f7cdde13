"""A snapshot's mapping after changes holds what a dict given the same changes holds, in the
same order, whether the changes stay apart from its base or are merged into a new one."""

from __future__ import annotations

import random

from policyd.catalog.layered import Layered


def test_a_layered_mapping_after_any_changes_equals_a_dict_after_them() -> None:
    rng = random.Random(7)
    base = {f"k{i}": i for i in range(300)}
    plain: dict[str, int] = dict(base)
    mapping: Layered[str, int] = Layered(base)
    for step in range(400):
        edits: dict[str, int | None] = {}
        for _ in range(rng.randint(1, 5)):
            key = f"k{rng.randrange(360)}"
            edits[key] = None if rng.random() < 0.4 else step
        for key, value in edits.items():
            plain.pop(key, None)
            if value is not None:
                plain[key] = value
        mapping = mapping.changed(edits)
        assert list(mapping.items()) == list(plain.items())
        assert len(mapping) == len(plain)
        assert all((k in mapping) == (k in plain) for k in (f"k{i}" for i in range(360)))
    assert base == {f"k{i}": i for i in range(300)}  # the base the first snapshot shares is never changed
