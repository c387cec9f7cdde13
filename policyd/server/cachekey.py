"""The decision cache's key for a request: a digest of the request, leaving out the
InferenceService's name when the rules revision never reads it — no rule tests ``isvc_name``
and no template or message prints it — as no response carries it otherwise. Two
InferenceServices of one model, in one namespace, with one spec are then decided once.

A rule whose condition asks for a name not of OME's format (``isvc_name_valid: false``, as the
webhook's name check) reads the name only then: such rules do not count, and a name not of
OME's format is always kept in the key."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

from google.protobuf.message import Message

from policyd.errors import InvalidInput
from policyd.facts.isvc_checks import NAME
from policyd.memo import Lru
from policyd.policy.model import Policy, Rule
from policyd.policy.templates import placeholders
from policyd.resources.proto import manifest_text

NAME_FIELD, VALID_NAME_FIELD = "isvc_name", "isvc_name_valid"


def _about_invalid_names(rule: Rule) -> bool:
    """Whether the rule fires only for a name not of OME's format."""
    return rule.when.get(VALID_NAME_FIELD) is False


def _readers(policy: Policy) -> Iterator[Rule]:
    return (rule for rule in policy.rules if not _about_invalid_names(rule))


_READS: Lru[str, bool] = Lru(16)


def reads_name(policy: Policy) -> bool:
    """Whether any rule tests, or any template or message prints, the InferenceService's name."""
    return _READS.get_or(
        policy.revision,
        lambda: (
            any(NAME_FIELD in rule.fields for rule in _readers(policy))
            or any(NAME_FIELD in placeholders(t) for t in policy.templates(_readers(policy)))
        ),
    )


def _nameless(request: Message) -> Message | None:
    """The request with the InferenceService's name left out; None when it has none to leave
    out, or its manifest does not parse (the handler reports that)."""
    field = getattr(request.DESCRIPTOR, "fields_by_name", {}).get("inference_service")
    if field is None or not request.HasField("inference_service"):
        return None
    out = type(request)()
    out.CopyFrom(request)
    isvc = out.inference_service  # type: ignore[attr-defined]
    if isvc.WhichOneof("input") == "typed":
        if not NAME.fullmatch(isvc.typed.metadata.name):
            return None
        isvc.typed.metadata.ClearField("name")
        return out
    try:
        doc = manifest_text(isvc.manifest, "inference_service.manifest")
    except InvalidInput:
        return None
    meta = doc.get("metadata")
    if isinstance(meta, dict):
        if not isinstance(meta.get("name"), str) or not NAME.fullmatch(meta["name"]):
            return None
        doc["metadata"] = {k: v for k, v in meta.items() if k != "name"}
    try:
        isvc.manifest = json.dumps(doc, sort_keys=True)
    except TypeError:  # YAML values JSON has not (dates): keyed by the text as sent
        return None
    return out


def request_digest(request: Message, policy: Policy, salt: bytes = b"") -> bytes:
    """``salt``: what else decides the answer (the field-validation mode)."""
    keyed = None if reads_name(policy) else _nameless(request)
    return hashlib.sha256(salt + (keyed or request).SerializeToString(deterministic=True)).digest()
