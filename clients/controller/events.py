"""Events recorded once per cause: while a cause is unchanged it is not recorded again, nor by a
restarted controller (each cause has one Event name); a cause that cleared and came back is
counted again on its Event."""

from __future__ import annotations

from collections.abc import Iterable

from clients.controller.kube import Kube, Manifest
from clients.controller.outcome import Event


class EventRecorder:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        # InferenceService uid -> reason -> message of the standing cause, None once it cleared
        self._causes: dict[str, dict[str, str | None]] = {}

    def record(self, isvc: Manifest, events: Iterable[Event]) -> None:
        """``events`` are every cause the InferenceService has now; the others have cleared."""
        causes = self._causes.setdefault(isvc["metadata"].get("uid", ""), {})
        current = {event.reason: event for event in events}
        for reason in causes.keys() - current.keys():
            causes[reason] = None
        for reason, event in current.items():
            if reason in causes and causes[reason] == event.message:
                continue
            if not self.kube.create_event(isvc, event) and reason in causes:
                self.kube.repeat_event(isvc, event)
            causes[reason] = event.message

    def forget(self, uid: str) -> None:
        self._causes.pop(uid, None)
