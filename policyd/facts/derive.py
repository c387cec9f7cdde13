"""Derive fact records from a request, its model, the runtimes and their entries, each engine
backend's facts among the model's and the runtime's. Derivation only describes; the rules judge.
Every field is declared in fields.py.

What is derived from manifests alone is memoised by a ``Derivation``, keyed by the content each
value reads (manifest digests, runtime shapes, the scoring settings), never by rules revision:
the deciders of a serving state's successive revisions share one, so a reload does not derive
its catalog's facts again."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from policyd.backends import BACKENDS, Backend, engine_key
from policyd.catalog.snapshot import NO_ACCELERATOR_CLASSES, AcceleratorClasses
from policyd.facts.fields import catalogue, neutral_record
from policyd.facts.isvc_checks import isvc_check_facts
from policyd.facts.profile import RuntimeProfile, read_profile
from policyd.facts.scoring import Scoring
from policyd.memo import Bounded
from policyd.records import MODEL, Record
from policyd.resources.deployment_modes import COMPONENTS
from policyd.resources.objects import BaseModel, Entry, InferenceService, ModelRef, ServingRuntime, VersionedName
from policyd.resources.versions import version_satisfies
from policyd.semantics.diffusion_model import component_names, hf_repo, pipeline_class
from policyd.semantics.format_label import format_label
from policyd.semantics.modes import annotated_mode, effective_mode, requested_mode
from policyd.semantics.pipelines import first_mismatch

T = TypeVar("T")
# Facts that depend only on manifests' content, by the digests of those manifests: the
# same runtime (and model) yields the same facts on every request.
_MEMO_LIMIT = 50_000
# A model's entry facts against each runtime shape are read again only when a request the
# shared verdicts have not kept judges that shape (decision/verdict_cache.py): fewer are kept.
_ENTRIES_LIMIT = 12_000
_TAG = re.compile(r":(?P<tag>[\w][\w.-]{0,127})$")


@dataclass(frozen=True)
class Subject:
    """What a decision is about: the InferenceService (none when a model is explained alone),
    its base model (none when it names none, or the one it names is missing), and the catalog's
    AcceleratorClasses, which facts with source catalog read (records.py)."""

    namespace: str
    isvc: InferenceService | None
    model: BaseModel | None
    model_ref: ModelRef | None = None
    named_runtime_found: bool = False
    accelerators: AcceleratorClasses = NO_ACCELERATOR_CLASSES

    @cached_property
    def engine_key(self) -> str:
        """What the InferenceService's engine sets on a runtime's runner, once per decision: the
        backends' engine facts are memoised by it and the runtime's digest."""
        return engine_key(self.isvc)


def image_unpinned(image: str) -> bool:
    """True when an image reference floats: no tag and no digest, or the tag ``latest``."""
    if "@" in image:
        return False
    match = _TAG.search(image.rsplit("/", 1)[-1])
    return match is None or match.group("tag") == "latest"


def _pairs(values: Mapping[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(values.items())]


def _request_facts(isvc: InferenceService | None, subject: Subject) -> Record:
    components = isvc.components if isvc else {}
    spec_mode = isvc.deployment_mode if isvc else ""

    def asked(component: str) -> str:
        return requested_mode(components.get(component), spec_mode) if component in components else ""

    ref = isvc.runtime if isvc else None
    return {
        "namespace": subject.namespace,
        "isvc_name": isvc.meta.name if isvc else "",
        "isvc_has_model": isvc is not None and isvc.model is not None,
        "isvc_names_runtime": ref is not None,
        "named_runtime": ref.name if ref else "",
        "named_runtime_kind": ref.kind if ref else "",
        "named_runtime_found": subject.named_runtime_found,
        "named_runtime_auto_sync": ref.auto_sync if ref else True,
        "named_runtime_revision": ref.revision if ref else "",
        "isvc_has_engine": "engine" in components,
        "isvc_has_decoder": "decoder" in components,
        "isvc_has_router": "router" in components,
        "accelerator_classes_requested": list(isvc.accelerator_classes) if isvc else [],
        "engine_mode_requested": asked("engine"),
        "decoder_mode_requested": asked("decoder"),
        "router_mode_requested": asked("router"),
        "engine_mode_requested_text": asked("engine") or "none",
        "decoder_mode_requested_text": asked("decoder") or "none",
        "isvc_scaling_mode": isvc.scaling_mode if isvc else "",
        **isvc_check_facts(isvc),
    }


def _model_facts(
    model: BaseModel | None, ref: ModelRef | None, backends: Sequence[Backend[Any]], none: Record
) -> Record:
    """``none``: the model facts of a request without a model (each field's neutral value)."""
    extensions = {n: v for b in backends for n, v in b.model_facts(model).items()} if model else none
    return {
        **extensions,
        "model_found": model is not None,
        "model_name": model.meta.name if model else ref.name if ref else "",
        "model_kind": model.kind if model else ref.kind if ref else "",
        "model_disabled": model.disabled if model else False,
        "model_distribution": model.distribution if model else "",
        "model_input_notes": "; ".join(model.notes) if model else "",
        "model_size_known": model is not None and model.size is not None,
        "model_size": model.size_text if model else "",
        "model_format_label": format_label(model) if model else "",
        "model_format_name": model.format.name if model and model.format else "",
        "model_format_version": model.format.version if model and model.format else "",
        "model_format_version_set": model is not None and model.format is not None and model.format.version_set,
        "model_has_framework": model is not None and model.framework is not None,
        "model_framework_name": model.framework.name if model and model.framework else "",
        "model_framework_version": model.framework.version if model and model.framework else "",
        "model_framework_version_set": model is not None
        and model.framework is not None
        and model.framework.version_set,
        "model_architecture": model.architecture if model else "",
        "model_quantization": model.quantization if model else "",
        "model_pipeline_class": pipeline_class(model) if model else "",
        "model_pipeline_known": model is not None and model.pipeline is not None,
        "model_pipeline_components": (", ".join(component_names(model)) or "<none>") if model else "",
        "model_hf_repo": hf_repo(model) if model else "",
    }


def _runtime_only_facts(runtime: ServingRuntime) -> Record:
    rng = runtime.size_range
    return {
        "runtime_name": runtime.meta.name,
        "runtime_kind": runtime.kind,
        "runtime_namespace": runtime.meta.namespace,
        "runtime_scope": "namespace-scoped" if runtime.namespaced else "cluster-scoped",
        "runtime_labels": _pairs(runtime.meta.labels),
        "runtime_annotations": _pairs(runtime.meta.annotations),
        "runtime_images": list(runtime.images),
        "runtime_image_unpinned": any(image_unpinned(i) for i in runtime.images),
        "runtime_disabled": runtime.disabled,
        "runtime_autoscaler_policy_ref": bool(runtime.autoscaler_policy_ref),
        "runtime_autoscaler_policy_ref_at": runtime.autoscaler_policy_ref,
        "runtime_input_notes": "; ".join(runtime.notes),
        "runtime_scaling_mode": runtime.scaling_mode,
        "engine_mode_runtime": annotated_mode(runtime.components.get("engine")),
        "decoder_mode_runtime": annotated_mode(runtime.components.get("decoder")),
        "router_mode_runtime": annotated_mode(runtime.components.get("router")),
        "accelerator_classes_runtime": list(runtime.accelerator_classes or ()),
        "size_range_set": rng is not None,
        "size_range_min": rng.min_text if rng else "",
        "size_range_max": rng.max_text if rng else "",
        "runtime_auto_select": any(e.auto_select for e in runtime.entries),
    }


class _Rows:
    """Records of one dict literal's fields, kept as tuples of their values: every runtime of a
    catalog has one, and at 20,000 runtimes the dicts took 26 MB, their values a fifth of it."""

    def __init__(self) -> None:
        self.fields: tuple[str, ...] = ()  # the literal's, in its order
        self.rows: Bounded[str, tuple[Any, ...]] = Bounded(_MEMO_LIMIT)

    def get(self, key: str, compute: Callable[[], Record]) -> Record:
        row = self.rows.get(key)
        if row is None:
            record = compute()
            self.fields = tuple(record)
            self.rows.put(key, tuple(record.values()))
            return record
        return dict(zip(self.fields, row, strict=True))


def _memory_min_gib(names: Sequence[str], accelerators: AcceleratorClasses) -> int:
    defined = (accelerators.by_name.get(name) for name in names)
    memory = [c.memory_gib for c in defined if c is not None and c.memory_gib is not None]
    return min(memory, default=0)


def _satisfies(model: VersionedName, entry: VersionedName) -> bool:
    # an empty version is set but unreadable: OME's comparison fails
    if model.parsed is None or entry.parsed is None:
        return False
    return version_satisfies(model.parsed, entry.parsed, entry.operator)


def _version_match(model: VersionedName | None, entry: VersionedName) -> bool:
    """Both versions set and the model's passes the entry's, or neither set."""
    if model is None or not model.version_set or not entry.version_set:
        return not entry.version_set and (model is None or not model.version_set)
    return _satisfies(model, entry)


def _versions_agree(model: VersionedName | None, entry: VersionedName) -> bool:
    """As OME scores an entry: a version set on one side only does not count against it."""
    if model is None or not model.version_set or not entry.version_set:
        return True
    return _satisfies(model, entry)


def _weight(name: VersionedName, unset: int, zero: int) -> int:
    if not name.weight_set:
        return unset
    return zero if name.weight == 0 else name.weight


def entry_alone_facts(entry: Entry, scoring: Scoring) -> Record:
    """The entry's intrinsic fields: they depend on the entry (and the scoring settings) alone."""
    return {
        "entry_index": entry.index,
        "entry_auto_select": entry.auto_select is True,
        "entry_counts_for_score": entry.auto_select is not False,
        "entry_format_name": entry.format.name,
        "entry_format_version": entry.format.version,
        "entry_format_version_set": entry.format.version_set,
        "entry_framework_name": entry.framework.name,
        "entry_framework_version": entry.framework.version,
        "entry_framework_version_set": entry.framework.version_set,
        "entry_architecture": entry.architecture,
        "entry_quantization": entry.quantization,
        "format_weight": _weight(entry.format, scoring.default_weight, scoring.zero_format_weight),
        "framework_weight": _weight(entry.framework, scoring.default_weight, scoring.zero_framework_weight),
        "priority": scoring.default_priority if entry.priority is None else entry.priority,
    }


def _entry_relative_facts(model: BaseModel, entry: Entry) -> Record:
    """The entry's relational fields: how the model fares against it."""
    mismatch = first_mismatch(model.pipeline, entry.pipeline)
    fmt, fw = model.format, model.framework
    format_name_match = fmt is not None and fmt.name == entry.format.name
    framework_name_match = fw is not None and fw.name == entry.framework.name
    return {
        "format_name_match": format_name_match,
        "format_version_match": _version_match(fmt, entry.format),
        "framework_name_match": framework_name_match,
        "framework_version_match": _version_match(fw, entry.framework),
        "entry_score_eligible": format_name_match
        and framework_name_match
        and _versions_agree(fmt, entry.format)
        and _versions_agree(fw, entry.framework),
        "pipeline_mismatch": mismatch.kind if mismatch else "",
        "pipeline_component": mismatch.component if mismatch else "",
        "pipeline_model_value": mismatch.model_value if mismatch else "",
        "pipeline_runtime_value": mismatch.runtime_value if mismatch else "",
    }


def component_records(runtime_rec: Record, isvc: InferenceService, runtime: ServingRuntime | None) -> list[Record]:
    """One record per component the InferenceService declares, with the mode it runs in."""
    out: list[Record] = []
    for name in COMPONENTS:
        if name not in isvc.components:
            continue
        mode = effective_mode(
            name, isvc.components[name], runtime.components.get(name) if runtime else None, isvc.deployment_mode
        )
        out.append(
            {**runtime_rec, "component_name": name, "component_mode": mode.mode, "component_mode_source": mode.source}
        )
    return out


class Derivation:
    """The facts derived from manifests alone, each made once: a model's record, a runtime's
    intrinsic fields, its entries' (alone and against a model), the backends' facts of its engine
    as an InferenceService runs it, its admission profile. Inside memo.transient() nothing is kept
    beyond the call."""

    def __init__(self, backends: Sequence[Backend[Any]] = BACKENDS) -> None:
        self.backends = tuple(backends)  # whose facts are derived
        # model facts of a request without a model (besides the ones _model_facts sets itself)
        self._no_model = neutral_record(MODEL, catalogue(self.backends))
        self._models: Bounded[str, Record] = Bounded(_MEMO_LIMIT)  # by the model's digest
        self._intrinsic = _Rows()
        self._engines: Bounded[tuple[str, str], Record] = Bounded(_MEMO_LIMIT)
        self._own_entries: Bounded[tuple[str, Scoring], tuple[Record, ...]] = Bounded(_MEMO_LIMIT)
        self._entries: Bounded[tuple[str, str, Scoring], tuple[Record, ...]] = Bounded(_ENTRIES_LIMIT)
        self._profiles: Bounded[str, RuntimeProfile] = Bounded(_MEMO_LIMIT)

    def model_record(self, model: BaseModel) -> Record:
        """The model's own facts (what a lint record of the model carries): read them, do not change them."""
        return self._models.get_or(model.digest, lambda: _model_facts(model, None, self.backends, self._no_model))

    def subject_record(self, subject: Subject) -> Record:
        """The request record: the InferenceService's facts and its model's."""
        if subject.model:
            model = self.model_record(subject.model)
        else:
            model = _model_facts(None, subject.model_ref, self.backends, self._no_model)
        return {**_request_facts(subject.isvc, subject), **model}

    def intrinsic(self, runtime: ServingRuntime) -> Record:
        """The fields that depend on the runtime alone (what the catalog's admission may test)."""
        return self._intrinsic.get(runtime.digest, lambda: _runtime_only_facts(runtime))

    def engine_facts(self, runtime: ServingRuntime, subject: Subject) -> Record:
        """Each backend's facts of the runtime's engine as the subject's InferenceService runs it."""
        return self._engines.get_or(
            (runtime.digest, subject.engine_key),
            lambda: {n: v for b in self.backends for n, v in b.engine_facts(runtime, subject.isvc).items()},
        )

    def runtime_record(
        self,
        subject: Subject,
        base: Record,
        runtime: ServingRuntime,
        entries: Sequence[Record],
        scoring: Scoring,
        named: bool,
    ) -> Record:
        """The record of one runtime for this request; ``entries`` are its entry facts."""
        rng = runtime.size_range
        size = subject.model.size if subject.model else None
        requested = subject.isvc.accelerator_classes if subject.isvc else ()
        listed = runtime.accelerator_classes or ()
        record = {**base, **self.intrinsic(runtime), **self.engine_facts(runtime, subject)}
        record["runtime_named"] = named
        record["accelerator_class_listed"] = all(c in listed for c in requested)
        record["size_in_range"] = rng is None or size is None or rng.min <= size <= rng.max
        record["accelerator_memory_min_gib"] = _memory_min_gib(listed, subject.accelerators)
        record["runtime_score"] = scoring.runtime_score(entries)
        return record

    def entry_own(self, runtime: ServingRuntime, scoring: Scoring) -> tuple[Record, ...]:
        """The intrinsic fields of each supportedModelFormats entry (what an index may hold)."""
        return self._own_entries.get_or(
            (runtime.shape, scoring), lambda: tuple(entry_alone_facts(e, scoring) for e in runtime.entries)
        )

    def entries(self, model: BaseModel, runtime: ServingRuntime, scoring: Scoring) -> tuple[Record, ...]:
        """The entry-only fields of each supportedModelFormats entry against the model."""
        own = self.entry_own(runtime, scoring)
        return self._entries.get_or(
            (model.digest, runtime.shape, scoring),
            lambda: tuple({**o, **_entry_relative_facts(model, e)} for o, e in zip(own, runtime.entries, strict=True)),
        )

    def profile(self, runtime: ServingRuntime) -> RuntimeProfile:
        """What OME's runtime webhook reads of the runtime (facts/profile.py)."""
        return self._profiles.get_or(runtime.digest, lambda: read_profile(runtime))
