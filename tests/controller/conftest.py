"""policyd and the renderer once per module; a namespace of its own and a clean cluster per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.cluster import Cluster
from testkit.shared import RULES

from policyd.clients.policyctl.conformance.daemons import serving

from .support import World


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[str, str]]:
    with (
        serving("policyd.daemon.main", ["--rules", str(RULES), "--log-level", "warning"], "127.0.0.1:0") as policyd,
        serving("policyd.clients.renderer.main", [], "unix:{tmp}/render.sock") as renderer,
    ):
        yield policyd, renderer


@pytest.fixture
def world(
    kube_cluster: Cluster, services: tuple[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[World]:
    namespace = getattr(request, "param", None) or "llama-demo"
    world = World(kube_cluster, *services, namespace=namespace, tmp=tmp_path)
    try:
        yield world
    finally:
        for controller in world.controllers:
            controller.stop()
        world.clean()
