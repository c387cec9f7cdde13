"""The controller leaves nothing in $TMPDIR: its dynamic client's discovery cache (by default
$TMPDIR/osrcp-*.json, shared by every process of the host and never removed) is kept in a
directory of the process's own, removed when it stops."""

from __future__ import annotations

import os
from pathlib import Path

from .manifests import AUTO_ISVC, auto_isvc, auto_model, auto_runtime
from .support import World, eventually, running


def test_the_controller_leaves_nothing_in_tmpdir(world: World, private_tmpdir: Path) -> None:
    world.apply(auto_model())
    world.apply(auto_runtime())
    with running(world):
        world.apply(auto_isvc())
        # its workloads are applied through the dynamic client: discovery has run
        eventually(lambda: world.workloads(AUTO_ISVC), what="the workloads")
        assert os.listdir(private_tmpdir), "its files are not where the test looks"
    assert os.listdir(private_tmpdir) == []
