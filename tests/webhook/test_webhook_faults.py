"""policy-webhook under faults and hostile callers: policyd coming back after a hanging connection
attempt, a slow API server during read-your-writes, malformed and deeply nested bodies, clients
that trickle or hold connections, an expired serving certificate, a bad --policyd address; and
what it leaves behind in $TMPDIR."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from controller.manifests import named_isvc, named_model, named_runtime
from testkit.relay import Relay
from testkit.shared import RULES

from clients.policyctl.conformance.daemons import serving

from .support import (
    PATHS,
    Certs,
    admission_review,
    running_webhook,
    serving_certs,
    unreachable_kubeconfig,
    webhook_command,
)

ISVC = PATHS["inferenceservice"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return serving_certs(tmp_path_factory.mktemp("webhook-certs"))


@pytest.fixture(scope="module")
def policyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    catalog = tmp_path_factory.mktemp("webhook-catalog")
    for i, doc in enumerate((named_runtime(), named_model())):
        (catalog / f"{i}.yaml").write_text(yaml.safe_dump(doc))
    args = ["--rules", str(RULES), "--catalog", str(catalog), "--log-level", "warning"]
    with serving("policyd.server.main", args, "127.0.0.1:0") as address:
        yield address


# -- policyd back ------------------------------------------------------------------------------------


def test_reviews_are_admitted_within_seconds_of_policyd_coming_back(certs: Certs, policyd: str) -> None:
    """Its last connection attempt hung (policyd's pod gone, its IP dropping the SYNs): gRPC alone
    gives such an attempt 20 s, denying every review meanwhile."""
    host, port = policyd.rsplit(":", 1)
    with Relay((host, int(port))) as relay, running_webhook(relay.address, certs.cert_dir) as webhook:
        client = webhook.client(certs.ca)
        assert client.post(f"{ISVC}?timeout=2s", admission_review(named_isvc())).response["allowed"] is False
        relay.wait_held(1)
        relay.forward()
        back = time.monotonic()
        while not client.post(f"{ISVC}?timeout=2s", admission_review(named_isvc())).response["allowed"]:
            assert time.monotonic() - back < 6, "still denied 6 s after policyd came back"
            time.sleep(0.05)


# -- flags ---------------------------------------------------------------------------------------------


def test_a_bad_policyd_address_is_refused_before_serving(certs: Certs, tmp_path: Path) -> None:
    command = webhook_command("bogus:::", certs.cert_dir, "--listen", "127.0.0.1:0")
    command += ["--kubeconfig", str(unreachable_kubeconfig(tmp_path / "kubeconfig"))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, "policy-webhook: address 'bogus:::': no port (give host:port)\n")


def test_the_help_names_the_files_cert_dir_holds() -> None:
    done = subprocess.run(
        webhook_command("127.0.0.1:1", Path("."), "--help"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "directory with tls.crt and tls.key, served as they change" in " ".join(done.stdout.split())
