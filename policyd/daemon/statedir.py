"""``--state-dir``: what a restart starts from, so a routine restart never turns a tolerated
fault into a crash loop, and comes back with the revisions it had.

- ``rules/<id of the rules directory>/``: a copy of the last rules revision that served. When the
  rules directory is refused at start-up, the daemon serves this copy (same files, so the same
  revision id) and reports the refusal, as it would after a refused reload.
- ``catalog-changes.json``: the ApplyObjects / DeleteObjects changes in force, restored at start-up
  (a change the watched directory has since overtaken ends, as it would while running).

Every write goes to a temporary name first and is renamed into place: a SIGKILL leaves the previous
copy or the new one, never half of one. Writes hold a lock on the directory (``.lock``), as the
processes of ``policyd --processes`` share it."""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from policyd.catalog.snapshot import Key
from policyd.errors import InvalidInput
from policyd.policy.loader import RuleFileError, load_policy
from policyd.policy.revision import Revision
from policyd.resources.manifests import parse_object
from policyd.server.state import Override

log = logging.getLogger("policyd.state_dir")
CHANGES = "catalog-changes.json"


class StateDirError(OSError):
    pass


class StateDir:
    def __init__(self, root: Path, rules_source: Path) -> None:
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=root, prefix=".probe-"):
                pass
        except OSError as err:
            raise StateDirError(f"cannot write the state directory {root}: {err.strerror or err}") from None
        digest = hashlib.sha256(str(rules_source.resolve()).encode()).hexdigest()[:12]
        self.rules = root / "rules" / digest

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with (self.root / ".lock").open("a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            yield

    def last_good_rules(self) -> Path | None:
        return self.rules if self.rules.is_dir() else None

    def keep_rules(self, revision: Revision) -> None:
        """Copy the revision's files; kept only if the copy is that revision (no file changed meanwhile)."""
        with self._locked():
            self._keep_rules(revision)

    def _keep_rules(self, revision: Revision) -> None:
        if self.rules.is_dir() and _revision_of(self.rules) == revision.id:
            return
        staging = Path(tempfile.mkdtemp(dir=self.root, prefix=".rules-"))
        try:
            for source in revision.policy.sources:
                shutil.copyfile(source, staging / Path(source).name)
            if _revision_of(staging) != revision.id:
                log.info("rules changed while being kept; the next revision will be", extra={"revision": revision.id})
                return
            self.rules.parent.mkdir(exist_ok=True)
            old = self.rules.with_name(self.rules.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            if self.rules.exists():
                os.rename(self.rules, old)
            os.rename(staging, self.rules)
            shutil.rmtree(old, ignore_errors=True)
        except OSError as err:
            log.error("cannot keep the last good rules", extra={"error": str(err), "directory": str(self.rules)})
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def save_changes(self, overrides: dict[Key, Override]) -> None:
        records = [
            {
                "key": list(key),
                "action": o.action,
                "at": o.at,
                "base": o.base,
                "manifest": dict(o.obj.raw) if o.obj is not None else None,
            }
            for key, o in sorted(overrides.items())
        ]
        try:
            with self._locked():
                _write_atomically(self.root / CHANGES, json.dumps(records, sort_keys=True))
        except OSError as err:
            log.error("cannot keep the catalog changes", extra={"error": str(err)})

    def load_changes(self) -> dict[Key, Override]:
        path = self.root / CHANGES
        try:
            records = json.loads(path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            log.error("kept catalog changes unreadable; starting without them", extra={"error": str(err)})
            return {}
        out: dict[Key, Override] = {}
        for record in records:
            try:
                kind, namespace, name = record["key"]
                obj = parse_object(record["manifest"]) if record["manifest"] is not None else None
                out[(kind, namespace, name)] = Override(record["action"], record["at"], obj, record["base"])
            except (InvalidInput, KeyError, TypeError, ValueError) as err:
                log.error("a kept catalog change no longer parses; dropped", extra={"error": str(err)})
        return out


def _revision_of(directory: Path) -> str:
    try:
        return load_policy(directory).revision
    except RuleFileError:
        return ""


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
