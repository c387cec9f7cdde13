"""The message keys a rules directory must define, and the variables each may print.

The texts themselves live in the rule files (rules/messages.yaml), so that OME's
exact wording is data an operator can read and change.
"""

from __future__ import annotations

MESSAGE_VARIABLES: dict[str, tuple[str, ...]] = {
    # Select: nothing can be selected
    "no_runtime": ("model_name", "model_format_name", "namespace", "checked", "namespaced", "cluster"),
    "excluded_runtimes": ("list",),
    "excluded_item": ("runtime_name", "reason"),
    "excluded_separator": (),
    # Select: admission warning
    "auto_selected": ("runtime_name", "model_name"),
    # a runtime that does not declare support: the detail in named-runtime warnings
    "incompatible": ("runtime_name", "model_name", "model_format_name", "reason"),
    "named_warning": ("runtime_name", "model_name", "detail"),
    "named_event": ("runtime_name", "model_name", "detail"),
    # Resolve rejections
    "runtime_not_found": ("runtime_name", "namespace"),
    "runtime_not_found_condition": ("runtime_name", "namespace"),
    "runtime_disabled": ("runtime_name",),
    # a named runtime whose compatibility rule rejects it (named: reject), e.g. its engine cannot start
    "named_refused": ("runtime_name", "model_name", "reason"),
    "model_not_found": ("model_name", "model_kind", "namespace"),
    "model_disabled": ("model_name",),
    "model_sharded": ("model_name",),
    "no_model_no_runtime": (),
    # Effective modes and admission checks
    "omenative_mismatch": ("engine_mode", "decoder_mode"),
    "router_multinode": ("mode",),
    "autoscaler_in_runtime": ("runtime_name",),
    "scaling_mode": ("mode", "field"),
}
