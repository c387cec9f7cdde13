"""The vocabulary fact fields are declared in: value types, scopes (and which outer scopes'
fields each scope's records carry), a field's declaration, and a record. The core's fact catalogue
(policyd/facts/fields.py) and each engine backend's fields (policyd/backends/) are declared in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

STR, BOOL, INT, LIST = "string", "boolean", "integer", "list"
# a record: the facts of one scope's subject by field name, as the rules engine matches them
Record = Mapping[str, Any]

# Scopes, and the scopes whose fields each scope's records also carry.
REQUEST, MODEL, RUNTIME, ENTRY, COMPONENT = "request", "model", "runtime", "entry", "component"
# Lint scopes describe the catalog rather than a request (policyd/whatif/lint_facts.py): a model with
# how it is decided, a runtime or one of its entries with what the catalog's models make of it, two
# runtimes claiming the same format and architecture, an accelerator class name.
LINT_MODEL, LINT_RUNTIME, LINT_ENTRY = "lint_model", "lint_runtime", "lint_entry"
LINT_PAIR, LINT_ACCELERATOR = "lint_pair", "lint_accelerator"
LINT_SCOPES = (LINT_MODEL, LINT_RUNTIME, LINT_ENTRY, LINT_PAIR, LINT_ACCELERATOR)
# Admission scopes judge a runtime under review by OME's runtime webhooks
# (policyd/facts/admission.py): the runtime alone, and the runtime against one existing runtime
# of its kind in its scope with one pair of entries OME calls equal.
ADMIT_RUNTIME, ADMIT_PAIR = "admit_runtime", "admit_pair"
ADMISSION_SCOPES = (ADMIT_RUNTIME, ADMIT_PAIR)
SCOPES = (REQUEST, MODEL, RUNTIME, ENTRY, COMPONENT, *LINT_SCOPES, *ADMISSION_SCOPES)
VISIBLE: dict[str, tuple[str, ...]] = {
    MODEL: (MODEL,),
    REQUEST: (REQUEST, MODEL),
    RUNTIME: (REQUEST, MODEL, RUNTIME),
    ENTRY: (REQUEST, MODEL, RUNTIME, ENTRY),
    COMPONENT: (REQUEST, MODEL, RUNTIME, COMPONENT),
    # lint records carry the runtime's and the entry's fields that depend on them alone
    LINT_MODEL: (MODEL, LINT_MODEL),
    LINT_RUNTIME: (RUNTIME, LINT_RUNTIME),
    LINT_ENTRY: (RUNTIME, ENTRY, LINT_RUNTIME, LINT_ENTRY),
    LINT_PAIR: (LINT_PAIR,),
    LINT_ACCELERATOR: (LINT_ACCELERATOR,),
    # admission records carry the runtime's fields that depend on it alone
    ADMIT_RUNTIME: (RUNTIME, ADMIT_RUNTIME),
    ADMIT_PAIR: (RUNTIME, ADMIT_RUNTIME, ADMIT_PAIR),
}
_EMPTY: dict[str, Any] = {STR: "", BOOL: False, INT: 0}
# What a fact reads, beside the subject of its scope: the request (the InferenceService and the
# model it names), the runtime judged (its entries and components; a relational field reads the
# request too), or the catalog (objects other than those: AcceleratorClasses, other runtimes).
# Kept verdicts are keyed by what their facts read (decision/verdict_cache.py): a runtime fact read from
# the catalog keys them by the AcceleratorClasses' revision, the only catalog objects a
# decision's subject carries (facts/derive.py).
FROM_REQUEST, FROM_RUNTIME, FROM_CATALOG = "request", "runtime", "catalog"
SOURCES = (FROM_REQUEST, FROM_RUNTIME, FROM_CATALOG)


@dataclass(frozen=True)
class Field:
    type: str
    scope: str
    doc: str
    neutral: Any = field(default=None)
    # a runtime or entry field that depends on the request or its model too (not on the
    # runtime or its entry alone); intrinsic fields can be indexed before any request
    relational: bool = False
    # what it reads (SOURCES): declared by every field, none assumed
    source: str = field(kw_only=True)

    @property
    def intrinsic(self) -> bool:
        """A runtime or entry field that depends on the runtime or its entry alone: neither
        relational nor read from the catalog (what an index, a lint record or the catalog's own
        refusals may read before any request)."""
        return not self.relational and self.source != FROM_CATALOG

    @property
    def neutral_value(self) -> Any:
        if self.neutral is not None:
            return self.neutral
        return [] if self.type == LIST else _EMPTY[self.type]
