"""Request fields into domain objects, each error naming its field from the request's root."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from policyd.catalog.snapshot import CatalogObject, Key, make_key
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.edge.limits import check_deadline
from policyd.errors import InvalidInput
from policyd.resources.manifests import KINDS, parse_inference_service, parse_object
from policyd.resources.objects import InferenceService
from policyd.resources.proto import isvc_manifest, object_manifest
from policyd.server.fieldcheck import FieldCheck

ISVC_FIELD = "inference_service"


@contextmanager
def under(prefix: str) -> Iterator[None]:
    """Name fields of a nested object from the request's root."""
    try:
        yield
    except InvalidInput as err:
        raise err.under(prefix) from None


def parse_isvc(value: rpb.InferenceServiceInput, fields: FieldCheck, field: str = ISVC_FIELD) -> InferenceService:
    manifest = isvc_manifest(value, field)
    with under(field):
        parsed = parse_inference_service(manifest)
    fields.manifest(manifest, field, subject=field == ISVC_FIELD)  # the request's subject needs no name
    return parsed


def catalog_object(obj: rpb.Object, field: str, fields: FieldCheck) -> CatalogObject:
    check_deadline()  # a request of many objects stops at its deadline, between them
    manifest = object_manifest(obj, field)
    with under(field):
        parsed = parse_object(manifest)
    fields.manifest(manifest, field)
    return parsed


def catalog_keys(keys: Sequence[pb.ObjectKey], field: str = "keys") -> list[Key]:
    out = []
    for i, k in enumerate(keys):
        if k.kind not in KINDS:
            raise InvalidInput(f"{field}[{i}].kind", f"unknown kind {k.kind!r} (one of {', '.join(KINDS)})")
        if not k.name:
            raise InvalidInput(f"{field}[{i}].name", "is required")
        out.append(make_key(k.kind, k.namespace, k.name))
    return out


def object_key(key: Key) -> pb.ObjectKey:
    kind, namespace, name = key
    return pb.ObjectKey(kind=kind, namespace=namespace, name=name)


def full_view(view: int) -> bool:
    """Whether a request's ``view`` asks for each verdict's FULL view (BASIC is the default)."""
    values = pb.VerdictView.DESCRIPTOR.values
    if view not in {v.number for v in values}:
        names = ", ".join(v.name for v in values if v.number)  # 0 is BASIC unsaid
        raise InvalidInput("view", f"unknown view {view} (one of {names})")
    return view == pb.VERDICT_VIEW_FULL
