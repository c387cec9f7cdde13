"""The message keys a rules directory must define, and the variables each may print.

The texts themselves live in the rule files (rules/messages.yaml), so that OME's exact
wording is data an operator can read and change. Refusals carry their own texts in the
rules that make them; these are the messages that put a decision's answer together.
"""

from __future__ import annotations

MESSAGE_VARIABLES: dict[str, tuple[str, ...]] = {
    # Select: nothing can be selected
    "no_runtime": ("model_name", "model_format_name", "namespace"),
    "checked_runtimes": ("checked", "namespaced", "cluster"),  # only when some runtime was checked
    "excluded_runtimes": ("list",),
    "excluded_item": ("runtime_name", "reason"),
    "excluded_separator": (),
    # Select: admission warning
    "auto_selected": ("runtime_name", "model_name"),
    # a runtime that does not declare support: the detail in named-runtime warnings
    "incompatible": ("runtime_name", "model_name", "model_format_name", "reason"),
    "named_warning": ("runtime_name", "model_name", "detail"),
    "named_event": ("runtime_name", "model_name", "detail"),
    # Admit: nothing can be selected and the engine has no complete runner of its own
    "admission_no_runtime": ("model_name", "error"),
}
