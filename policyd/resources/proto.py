"""The parser from the protobuf contract: messages become manifests, then resources.

Message field JSON names equal the manifest field names, so MessageToDict gives
the manifest; Structs that stand for inlined fields (``pod``, ``extra``) are
folded back into their parent.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

from policyd.contract import resources_pb2 as pb
from policyd.errors import InvalidInput
from policyd.resources import kinds as ome
from policyd.resources import safe_yaml
from policyd.resources.manifests import load_documents

_INLINED = ("pod", "extra")
API_VERSION = ome.API_VERSION


def _integral(value: Any) -> Any:
    """Structs carry every number as a double; give back integers where they were integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _fold(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _INLINED and isinstance(item, dict):
                for inner_key, inner in _fold(item).items():
                    out.setdefault(inner_key, inner)
            else:
                out[key] = _fold(item)
        return out
    if isinstance(value, list):
        return [_fold(v) for v in value]
    return value


def _values(message: Message, path: str) -> Iterator[tuple[str, float]]:
    """Every number of the Structs in ``message``, with its JSON path."""
    if isinstance(message, struct_pb2.Value):
        which = message.WhichOneof("kind")
        if which == "number_value":
            yield path, message.number_value
        elif which in ("struct_value", "list_value"):
            yield from _values(getattr(message, which), path)
        return
    if isinstance(message, struct_pb2.Struct):
        for key, value in message.fields.items():
            yield from _values(value, f"{path}.{key}")
        return
    if isinstance(message, struct_pb2.ListValue):
        for i, value in enumerate(message.values):
            yield from _values(value, f"{path}[{i}]")
        return
    for fd, value in message.ListFields():
        if fd.message_type is None:
            continue
        where = f"{path}.{fd.json_name}" if path else fd.json_name
        if fd.message_type.GetOptions().map_entry:
            for key, item in value.items():
                if isinstance(item, Message):
                    yield from _values(item, f"{where}.{key}")
        elif fd.is_repeated:
            for i, item in enumerate(value):
                yield from _values(item, f"{where}[{i}]")
        else:
            yield from _values(value, where)


def _to_dict(message: Message, field: str) -> dict[str, Any]:
    """MessageToDict, with a number JSON cannot carry (NaN, Infinity) refused by its field."""
    try:
        value: dict[str, Any] = json_format.MessageToDict(message)
    except (json_format.SerializeToJsonError, ValueError):
        for path, number in _values(message, field):
            if not math.isfinite(number):
                raise InvalidInput(path, f"{number!r} is not a number JSON can carry") from None
        raise
    return value


def struct_to_dict(struct: struct_pb2.Struct, field: str = "") -> dict[str, Any]:
    """A Struct as the JSON object it stands for, integers integral again."""
    value: dict[str, Any] = safe_yaml.json_value(_integral(_to_dict(struct, field)), field)
    return value


def message_to_manifest(message: Message, kind: str, field: str = "") -> dict[str, Any]:
    doc = safe_yaml.json_value(_fold(_integral(_to_dict(message, field))), field)
    doc.setdefault("kind", kind)
    doc.setdefault("apiVersion", API_VERSION)
    return dict(doc)


def manifest_text(text: str, field: str) -> dict[str, Any]:
    """Exactly one manifest from YAML or JSON text."""
    # a refused value is named as a parse error is: by the object's field (catalog.objects[0].spec.x)
    docs = load_documents(text, field, field.removesuffix(".manifest"))
    if len(docs) != 1:
        raise InvalidInput(field, f"must hold exactly one manifest, found {len(docs)}")
    return docs[0]


def object_manifest(obj: pb.Object, field: str) -> dict[str, Any]:
    which = obj.WhichOneof("object")
    if which == "manifest":
        return manifest_text(obj.manifest, f"{field}.manifest")
    if which == "model":
        return message_to_manifest(obj.model, obj.model.kind or "ClusterBaseModel", f"{field}.model")
    if which == "runtime":
        return message_to_manifest(obj.runtime, obj.runtime.kind or "ClusterServingRuntime", f"{field}.runtime")
    raise InvalidInput(field, "is empty: set model, runtime or manifest")


def isvc_manifest(value: pb.InferenceServiceInput, field: str) -> dict[str, Any]:
    which = value.WhichOneof("input")
    if which == "manifest":
        return manifest_text(value.manifest, f"{field}.manifest")
    if which == "typed":
        return message_to_manifest(value.typed, "InferenceService", f"{field}.typed")
    raise InvalidInput(field, "is required: set typed or manifest")


def manifest_to_message(doc: Mapping[str, Any], message: Message) -> Message:
    """A manifest into a typed message (the inverse, for clients); fields the message
    lacks go to the Struct that stands for them."""
    json_format.ParseDict(dict(doc), message, ignore_unknown_fields=True)
    return message
