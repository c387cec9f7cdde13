"""Who may call what: ``--authz FILE`` lists client identities under ``read`` and ``write``.

    read: ["*"]                          # any caller
    write: [policy-controller, spiffe://cluster.local/ns/ome/sa/policyd]

An identity is the client certificate's subject common name or one of its subject
alternative names (DNS, URI, e-mail, IP), as gRPC reports them; ``"*"`` is any caller,
with a certificate or without. The lists are independent: a writer that also reads is in
both. The file is read again when it changes; a change that cannot be read keeps the
previous lists (logged)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyd.errors import InvalidInput
from policyd.resources import safe_yaml

log = logging.getLogger("policyd.authz")
# Simulate and Lint apply nothing: what they are sent (rule files included) stays in the call;
# Admit and Default answer the webhook and change nothing either
READ = frozenset(
    {"Select", "Explain", "Resolve", "Effective", "Decide", "InspectModel", "GetObjects", "GetStatus", "Simulate"}
    | {"Lint", "Admit", "Default"}
)
WRITE = frozenset({"ApplyObjects", "DeleteObjects"})
ANY = "*"
_RECHECK_SECONDS = 1.0


class AuthzError(ValueError):
    """An authorization file that cannot be used, in one line."""


@dataclass(frozen=True)
class Policy:
    read: frozenset[str]
    write: frozenset[str]

    def allows(self, method: str, identities: Sequence[str]) -> bool:
        allowed = self.read if method in READ else self.write if method in WRITE else frozenset()
        return ANY in allowed or any(i in allowed for i in identities)


def parse(doc: Any, source: str) -> Policy:
    if not isinstance(doc, Mapping):
        raise AuthzError(f"{source}: must be a mapping with read: and write: lists")
    unknown = sorted(set(doc) - {"read", "write"})
    if unknown:
        raise AuthzError(f"{source}: unknown key {', '.join(unknown)} (read and write are the keys)")
    lists: dict[str, frozenset[str]] = {}
    for key in ("read", "write"):
        value = doc.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise AuthzError(f'{source}: {key}: must be a list of identities (strings), or ["*"]')
        lists[key] = frozenset(value)
    return Policy(lists["read"], lists["write"])


def load(path: Path) -> Policy:
    try:
        text = path.read_bytes().decode()
    except (OSError, UnicodeDecodeError) as err:
        raise AuthzError(f"cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
    try:
        doc = safe_yaml.load_one(text, str(path), max_bytes=1 << 20)
    except InvalidInput as err:
        raise AuthzError(str(err)) from None
    return parse(doc, str(path))


def identities(auth_context: Mapping[str, Sequence[bytes]]) -> list[str]:
    """The caller's identities from its verified certificate: common name and alternative names."""
    names = [*auth_context.get("x509_common_name", ()), *auth_context.get("x509_subject_alternative_name", ())]
    return [n.decode(errors="replace") for n in names]


class Authorizer:
    """The policy of an authorization file, read again when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._policy = load(path)
        self._stamp = self._stat()
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def _stat(self) -> tuple[int, int]:
        try:
            st = self.path.stat()
        except OSError:
            return (0, 0)
        return (st.st_mtime_ns, st.st_size)

    def policy(self) -> Policy:
        now = time.monotonic()
        if now - self._checked < _RECHECK_SECONDS:
            return self._policy
        with self._lock:
            self._checked = now
            stamp = self._stat()
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._policy = load(self.path)
                    log.info("authorization file read again", extra={"file": str(self.path)})
                except AuthzError as err:
                    log.error("authorization file refused; the previous lists stay", extra={"error": str(err)})
        return self._policy

    def allows(self, method: str, auth_context: Mapping[str, Sequence[bytes]]) -> bool:
        return self.policy().allows(method, identities(auth_context))
