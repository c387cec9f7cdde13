"""Every fact declares what it reads (records.py's sources): the request, the runtime, or the
catalog. The declaration is required, checked when the catalogue loads, and a fact read from
the catalog (the GPU memory of a runtime's AcceleratorClasses) is derived as OME reads the
class, never taken for one that depends on the runtime alone."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.backends import BACKENDS
from policyd.catalog.snapshot import NO_ACCELERATOR_CLASSES, Catalog
from policyd.errors import InvalidInput
from policyd.facts import fields
from policyd.facts.derive import Derivation, Subject
from policyd.facts.fields import CORE_FIELDS, FIELDS, catalogue, fields_of
from policyd.records import FROM_CATALOG, FROM_RUNTIME, LINT_RUNTIME, REQUEST, RUNTIME, STR, Field
from policyd.resources.manifests import parse_object
from policyd.resources.objects import ServingRuntime

from .builders import default_revision, runtime


def test_a_fact_without_a_declared_source_cannot_be_declared() -> None:
    with pytest.raises(TypeError, match="source"):
        Field(STR, RUNTIME, "what it reads, unsaid")  # type: ignore[call-arg]


def test_the_catalogue_refuses_a_source_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fields, "CORE_FIELDS", {**CORE_FIELDS, "odd": Field(STR, RUNTIME, "odd", source="cluster")})
    with pytest.raises(ValueError, match="fact field 'odd' has source 'cluster'; a fact reads one of request, runtime"):
        catalogue(BACKENDS)


def test_a_request_fact_cannot_read_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    odd = Field(STR, REQUEST, "odd", source=FROM_RUNTIME)
    monkeypatch.setattr(fields, "CORE_FIELDS", {**CORE_FIELDS, "odd": odd})
    with pytest.raises(ValueError, match="fact field 'odd' is a request field: it cannot read the runtime"):
        catalogue(BACKENDS)


def test_a_runtime_fact_read_from_the_catalog_is_not_intrinsic() -> None:
    spec = FIELDS["accelerator_memory_min_gib"]
    assert (spec.scope, spec.source, spec.intrinsic) == (RUNTIME, FROM_CATALOG, False)
    assert "accelerator_memory_min_gib" not in fields_of(LINT_RUNTIME)


def _gpu(name: str, memory: Any) -> dict[str, Any]:
    doc = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": name}}
    return {**doc, "spec": {"capabilities": {"memoryGB": memory}} if memory is not None else {}}


def _memory(classes: list[str], *gpus: dict[str, Any]) -> int:
    found = parse_object(runtime(classes=classes))
    assert isinstance(found, ServingRuntime)
    accelerators = Catalog.of([parse_object(g) for g in gpus]).classes() if gpus else NO_ACCELERATOR_CLASSES
    subject = Subject("default", None, None, accelerators=accelerators)
    facts = Derivation()
    record = facts.runtime_record(
        subject, facts.subject_record(subject), found, (), default_revision().policy.scoring, False
    )
    return int(record["accelerator_memory_min_gib"])


@pytest.mark.parametrize(
    ("memory", "gib"), [("80Gi", 80), ("16Gi", 16), ("80G", 74), ("1.5Ti", 1536), (80, 0), ("85899345920", 80)]
)
def test_an_accelerator_class_memory_reads_as_ome_reads_it(memory: Any, gib: int) -> None:
    # Quantity.Value() / (1024 * 1024 * 1024): a bare number is bytes
    assert _memory(["gpu-a"], _gpu("gpu-a", memory)) == gib


def test_the_least_memory_of_the_classes_a_runtime_names_counts() -> None:
    gpus = (_gpu("gpu-a", "80Gi"), _gpu("gpu-b", "48Gi"), _gpu("gpu-c", None), _gpu("gpu-d", "16Gi"))
    assert _memory(["gpu-a", "gpu-b", "gpu-c", "gpu-x"], *gpus) == 48
    assert _memory(["gpu-c", "gpu-x"], *gpus) == 0  # none defined with a memory
    assert _memory([]) == 0


def test_an_unreadable_memory_names_its_field() -> None:
    with pytest.raises(InvalidInput) as err:
        parse_object(_gpu("gpu-a", "lots"))
    assert (err.value.field, err.value.message) == (
        "spec.capabilities.memoryGB",
        "must be a quantity such as 80Gi, got 'lots'",
    )
