"""The rule effects, and what a named runtime's refusal kinds do, defined once. The rule-file
schema, the loader, the engine, the self-test, lint and the docs read them from here: adding an
effect is a row in EFFECTS, a rule file that uses it, and a test (docs/rules.md says so)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyd.records import ADMISSION_SCOPES, COMPONENT, ENTRY, LINT_SCOPES, MODEL, REQUEST, RUNTIME


@dataclass(frozen=True)
class Effect:
    name: str
    meaning: str
    scopes: tuple[str, ...]  # the scopes a rule with this effect may apply to
    deciding: bool = False  # can make a runtime unselectable (or refuse the request)
    kinded: bool = False  # its refusals carry a refusal kind (the rule's ``kind``)
    reports: bool = False  # lint's: reports what it finds, decides nothing
    grouped: bool = False  # a group of rules may take it
    requires: str = ""  # the rule field it takes, required with it and allowed only with it


EFFECTS: Mapping[str, Effect] = {
    e.name: e
    for e in (
        Effect(
            "refuse",
            "the request is refused (request, model and component rules); a runtime rule refuses the "
            "runtime itself: the catalog does not take it, and a runtime that has it cannot be used; "
            "an admission rule denies the object under review",
            (REQUEST, MODEL, RUNTIME, COMPONENT, *ADMISSION_SCOPES),
            deciding=True,
            kinded=True,
            grouped=True,
        ),
        Effect(
            "exclude",
            "the runtime does not declare support (not compatible, not selectable)",
            (RUNTIME, ENTRY),
            deciding=True,
            kinded=True,
            grouped=True,
        ),
        Effect(
            "reject",
            "the runtime cannot be auto-selected, compatibility judged apart (e.g. disabled)",
            (RUNTIME,),
            deciding=True,
            kinded=True,
            grouped=True,
        ),
        Effect(
            "skip",
            "not selectable, and not counted as an exclusion (e.g. no autoSelect entry)",
            (RUNTIME,),
            deciding=True,
            grouped=True,
        ),
        Effect(
            "advise",
            "adds an advisory, no other effect: a runtime's or an entry's to the runtime's verdict; a "
            "request's is a warning about the request itself, which the InferenceService webhook gives; "
            "an admission rule's is a warning the runtime webhooks give",
            (REQUEST, RUNTIME, ENTRY, *ADMISSION_SCOPES),
        ),
        Effect("score", "adds ``points`` to the score", (RUNTIME, ENTRY), requires="points"),
        Effect(
            "finding",
            "(lint scopes) reports what lint finds, with a ``severity``; decides nothing",
            LINT_SCOPES,
            reports=True,
            requires="severity",
        ),
        Effect(
            "allow",
            "waives the rules it ``overrides`` where its condition holds (their conditions get "
            '"and not this one" when loaded); it never fires itself',
            (RUNTIME, ENTRY, *LINT_SCOPES, *ADMISSION_SCOPES),
            requires="overrides",
        ),
    )
}
DECIDING = frozenset(e.name for e in EFFECTS.values() if e.deciding)
KINDED = frozenset(e.name for e in EFFECTS.values() if e.kinded)
WAIVABLE = frozenset(e.name for e in EFFECTS.values() if e.deciding or e.reports)  # what an allow may override
GROUPED = tuple(e.name for e in EFFECTS.values() if e.grouped)  # the effects a group of rules may take
# what a rule test may expect of its rule: a deciding or reporting effect, or that it passes
OUTCOMES = (*(e.name for e in EFFECTS.values() if e.deciding or e.reports), "pass")


def scope_effects(scope: str) -> tuple[str, ...]:
    """The effects a rule that applies to ``scope`` may take, in EFFECTS' order."""
    return tuple(e.name for e in EFFECTS.values() if scope in e.scopes)


# What a refusal's kind makes of a runtime the InferenceService names (spec.runtime): words of
# their own, not effects'. A rule file's ``kinds`` say one for each kind.
WARN, BLOCK, USE = "warn", "block", "use"
NAMED_ACTIONS: Mapping[str, str] = {
    WARN: "the named runtime is used anyway, with a warning and an event",
    BLOCK: "the named runtime is not used: the InferenceService is refused",
    USE: "the named runtime is used, silently",
}
