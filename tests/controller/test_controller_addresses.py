"""The controller's --policyd takes a list of host:port addresses, comma-separated, as one
channel balanced over them (a --processes daemon's endpoints); a list it cannot connect to as
written is refused before it starts, naming the address, with exit code 2."""

from __future__ import annotations

from .support import World, eventually, running


def test_a_policyd_list_is_one_balanced_channel(world: World) -> None:
    with running(world, policyd=f"{world.policyd},{world.policyd}") as controller:
        eventually(lambda: controller.logged("catalog in sync"), what="synced through the listed addresses")


def test_a_policyd_list_that_cannot_be_one_channel_is_refused_naming_the_address(world: World) -> None:
    controller = world.start_controller(policyd=f"{world.policyd},unix:/tmp/policyd.sock")
    assert controller.proc.wait(timeout=30) == 2
    output = controller.log_path.read_text()
    assert "policy-controller: address" in output and "'unix:/tmp/policyd.sock' is not host:port" in output
    assert "Traceback" not in output
