"""GetStatus: the rules and catalog revisions, and the last rules reload attempt."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from policyd.contract import policy_pb2 as pb

from .support import RULES, Harness, isvc_typed, rules_revision, typed_catalog


def test_status_names_the_revisions_and_an_ok_load(harness: Harness, revision: str) -> None:
    before = time.time()
    status = harness.ok("GetStatus", pb.GetStatusRequest())
    assert status.revisions.rules_revision == revision
    assert status.revisions.catalog_revision
    attempt = status.last_attempt
    assert attempt.ok is True
    assert attempt.revision == revision
    assert (attempt.error, attempt.file, attempt.rule_id, attempt.line) == ("", "", "", 0)
    assert 0 < attempt.at_unix_seconds <= before
    assert (status.runtimes, status.models) == (0, 0)
    assert list(status.catalog_errors) == []


def test_decisions_name_the_same_revisions_as_status(harness: Harness) -> None:
    status = harness.ok("GetStatus", pb.GetStatusRequest())
    explained = harness.ok("Explain", pb.ExplainRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    assert explained.revisions.rules_revision == status.revisions.rules_revision
    # Request objects are laid on top of the daemon's catalog: its revision, then theirs.
    assert explained.revisions.catalog_revision.startswith(status.revisions.catalog_revision + "+")


def test_refused_reload_is_reported_and_the_last_good_rules_keep_serving(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules)
    harness = Harness(rules)
    good = rules_revision(rules)
    target = rules / "10-runtime.yaml"
    target.write_text(target.read_text().replace("when: {runtime_disabled: true}", "when: {runtime_disabld: true}", 1))

    attempt = harness.state.reload_rules()
    assert attempt.ok is False

    status = harness.ok("GetStatus", pb.GetStatusRequest())
    assert status.revisions.rules_revision == good
    last = status.last_attempt
    assert last.ok is False
    assert last.revision == good
    assert Path(last.file) == target
    assert last.rule_id == "runtime-disabled"
    assert last.line > 0
    assert "runtime_disabld" in last.error
    reply = harness.ok("Select", pb.SelectRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    assert reply.revisions.rules_revision == good
    assert reply.ranking
