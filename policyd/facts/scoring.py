"""How a runtime's entries score and which one matches, as the rule files' ``scoring`` settings
say: the facts of each entry read through the weights the policy gives them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scoring:
    default_weight: int  # a weight left unset
    zero_format_weight: int  # modelFormat.weight: 0, as OME reads it
    zero_framework_weight: int
    default_priority: int
    add: tuple[str, ...]
    multiply_by: str
    count: tuple[str, ...]  # boolean entry facts that must hold for an entry to count toward the runtime's score
    matched_count: tuple[str, ...]  # ... to be the runtime's matched entry
    matched_auto_selected: tuple[str, ...]  # ... when OME chose the runtime
    matched_priority: str  # entry | default: the priority the matched entry is scored with

    def entry_score(self, record: Mapping[str, Any], priority: int | None = None) -> int:
        total = sum(int(record[name]) for name in self.add)
        if self.multiply_by != "priority":
            return total
        return total * int(record["priority"] if priority is None else priority)

    def runtime_score(self, entries: Sequence[Mapping[str, Any]]) -> int:
        """The best score among the entries that count; OME's starts at 0, so never below."""
        return max([0, *(self.entry_score(e) for e in entries if all(e[f] for f in self.count))])

    def matched_entry(self, entries: Sequence[Mapping[str, Any]], auto_selected: bool) -> int:
        """The index of the entry whose settings (acceleratorConfig) apply: the first best-scored one."""
        needs = self.matched_count + (self.matched_auto_selected if auto_selected else ())
        priority = self.default_priority if self.matched_priority == "default" else None
        best, at = 0, -1
        for record in entries:
            if all(record[f] for f in needs) and (score := self.entry_score(record, priority)) > best:
                best, at = score, int(record["entry_index"])
        return at
