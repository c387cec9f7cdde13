"""Events as client-go's EventCorrelator keeps them: one Event object per InferenceService and
reason. While a cause is unchanged it is not recorded again, nor by a restarted controller; a
cause repeating with other details (OME's "Checked N runtimes" while runtimes are applied), or
one that cleared and came back, is counted on that Event, which takes the newest message."""

from __future__ import annotations

from collections.abc import Iterable

from policyd.clients.controller.kube import Kube, Manifest
from policyd.clients.controller.outcome import Event


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
            if not self.kube.create_event(isvc, event):
                self.kube.repeat_event(isvc, event, again=reason in causes)
            causes[reason] = event.message

    def forget(self, uid: str) -> None:
        self._causes.pop(uid, None)
