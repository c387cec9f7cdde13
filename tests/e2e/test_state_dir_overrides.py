"""With --state-dir an API change over a watched object survives a restart, and apply, delete
and status say so; without it they say the change ends when policyd restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyd.clients.policyctl.conformance.daemons import serving

from .support import RULES, policyctl, spec_manifest, succeeded, write_yaml

NAME = "watched-and-kept"
KEPT = "until the object changes there (policyd's --state-dir keeps it across restarts)"
LOST = "until the object changes there, or policyd restarts"


def _args(watched: Path, state: Path | None) -> list[str]:
    args = ["--rules", str(RULES), "--catalog", str(watched), "--log-level", "warning"]
    return [*args, "--state-dir", str(state)] if state is not None else args


@pytest.mark.parametrize("kept", [True, False], ids=["state-dir", "none"])
def test_the_override_warning_and_status_say_how_long_the_change_holds(tmp_path: Path, kept: bool) -> None:
    watched = tmp_path / "catalog"
    watched.mkdir()
    runtime = spec_manifest("004", "ClusterServingRuntime", "sglang-llama-3-3-70b")
    runtime["metadata"]["name"] = NAME
    file = write_yaml(watched / f"{NAME}.yaml", runtime)
    changed = write_yaml(tmp_path / "changed.yaml", dict(runtime, spec={**runtime["spec"], "disabled": True}))
    state = tmp_path / "state" if kept else None
    holds = KEPT if kept else LOST
    with serving("policyd.daemon.main", _args(watched, state), "127.0.0.1:0") as address:
        applied = policyctl("apply", "-f", str(changed), address=address)
        succeeded(applied)
        assert applied.stderr.strip() == (
            f"Warning: clusterservingruntime.ome.io/{NAME} is also in the watched catalog directory ({file}): "
            f"this change holds {holds}"
        )
        assert f"OVERRIDES OF THE WATCHED DIRECTORY ({holds})" in policyctl("status", address=address).stdout
    with serving("policyd.daemon.main", _args(watched, state), "127.0.0.1:0") as address:
        status = policyctl("status", address=address).stdout
        # what was said is what happens: the change outlives the restart only with --state-dir
        assert (f"clusterservingruntime.ome.io/{NAME}" in status) is kept, status
