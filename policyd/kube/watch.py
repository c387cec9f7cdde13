"""One OME kind listed and watched as client-go's reflector does, with the kubernetes client's
list call and its watch stream: a paged list, then a watch resumed from the last resourceVersion
seen (events and bookmarks move it); a 410 Gone (history compacted) lists again, and the sink
gets the whole kind, so nothing changed in the gap is lost; any other failure (the API server
gone, a connection reset) waits with backoff and resumes from where it was."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from policyd.resources.kinds import OmeKind

log = logging.getLogger("policyd.cluster")
PAGE = 500  # objects a list page: client-go's pager's default
WATCH_SECONDS = (300, 600)  # a watch's server-side timeout, drawn in this range (client-go's)
CONNECT_SECONDS = 10.0
# first and longest wait between failed attempts: an API server back (a restart, a rollout) is
# listened to again within seconds, while a replica's six watches ask at most once a few seconds
BACKOFF = (0.2, 5.0)
Manifest = dict[str, Any]
T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Sink(Protocol[T_contra]):
    """What a kind's watch reports to; called on the watch's own thread, one call at a time per kind."""

    def listed(self, kind: OmeKind, objects: Sequence[T_contra], resource_version: str) -> None:
        """Every object of the kind (each as the watch's ``convert`` made it), as of ``resource_version``."""

    def changed(self, kind: OmeKind, event: str, obj: Manifest, resource_version: str) -> None:
        """ADDED, MODIFIED or DELETED."""

    def moved(self, kind: OmeKind, resource_version: str) -> None:
        """A bookmark: nothing changed up to ``resource_version``."""

    def connected(self, kind: OmeKind) -> None:
        """A list or a watch was answered."""

    def failed(self, kind: OmeKind, error: str) -> None:
        """The API server did not answer; the watch tries again after a backoff."""


@dataclass
class Counts:
    lists: int = 0
    watches: int = 0


class Gone(Exception):
    """The resourceVersion to resume from is compacted away: list again."""


class KindWatch(Generic[T]):
    """``convert`` takes each listed object as a page of the list arrives, so a list of many
    thousand objects is never held whole as the API server's JSON."""

    def __init__(self, api: client.ApiClient, kind: OmeKind, sink: Sink[T], convert: Callable[[Manifest], T]) -> None:
        self.kind = kind
        self.sink = sink
        self.convert = convert
        self.counts = Counts()
        self._custom = client.CustomObjectsApi(api)
        self._stopping = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{kind.plural}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; not waited for (a list in flight ends with its request; the thread is a
        daemon's, and reports nothing once stopped)."""
        self._stopping.set()
        current = self._watch
        if current is not None:
            current.stop()  # shuts the socket down: the blocked read returns

    def _run(self) -> None:
        resource_version = ""
        delay = BACKOFF[0]
        while not self._stopping.is_set():
            try:
                if not resource_version:
                    resource_version = self._list()
                resource_version = self._follow(resource_version)
                delay = BACKOFF[0]
            except Gone:
                log.info("%s: resourceVersion %s expired; listing again", self.kind.name, resource_version)
                resource_version = ""
            except (ApiException, HTTPError, OSError, ValueError) as err:
                if self._stopping.is_set():
                    return
                self.sink.failed(self.kind, _describe(err))
                # full jitter: replicas that lost the API server together do not come back together
                self._stopping.wait(random.uniform(delay / 2, delay))
                delay = min(delay * 2, BACKOFF[1])

    def _list(self) -> str:
        """Every object of the kind, page by page, all as of the first page's resourceVersion."""
        objects: list[T] = []
        token: str | None = None
        resource_version = ""
        while True:
            try:
                page: Any = self._custom.list_cluster_custom_object(
                    self.kind.group,
                    self.kind.version,
                    self.kind.plural,
                    limit=PAGE,
                    _continue=token,
                    _request_timeout=(CONNECT_SECONDS, 60.0),
                )
            except ApiException as err:
                if err.status == 410 and token:  # the continue token expired: a consistent list starts over
                    objects, token, resource_version = [], None, ""
                    continue
                raise
            meta = page.get("metadata") or {}
            resource_version = resource_version or str(meta.get("resourceVersion", ""))
            for item in page.get("items") or []:
                item.setdefault("kind", self.kind.name)  # a list's items come without it
                objects.append(self.convert(item))
            del page
            token = meta.get("continue") or None
            if token is None:
                break
        self.counts.lists += 1
        if not self._stopping.is_set():
            self.sink.connected(self.kind)
            self.sink.listed(self.kind, objects, resource_version)
        return resource_version

    def _follow(self, resource_version: str) -> str:
        """Watch from ``resource_version`` until the server ends the watch; the last resourceVersion seen."""
        self._watch = current = watch.Watch()
        try:
            for event in self._events(current, resource_version):
                kind_of_event = event.get("type")
                obj = event.get("object") or {}
                seen = str((obj.get("metadata") or {}).get("resourceVersion", "")) or resource_version
                if kind_of_event == "BOOKMARK":
                    self.sink.moved(self.kind, seen)
                elif kind_of_event in ("ADDED", "MODIFIED", "DELETED"):
                    obj.setdefault("kind", self.kind.name)
                    self.sink.changed(self.kind, kind_of_event, obj, seen)
                resource_version = seen
                if self._stopping.is_set():
                    break
        except ApiException as err:
            if err.status == 410:
                raise Gone() from err
            raise
        finally:
            self._watch = None
        return resource_version

    def _events(self, current: watch.Watch, resource_version: str) -> Iterator[dict[str, Any]]:
        def opened(*args: Any, **kwargs: Any) -> Any:
            # the watch's HTTP response, once the API server answered: connected again
            response = self._custom.list_cluster_custom_object(*args, **kwargs)
            self.counts.watches += 1
            status = getattr(response, "status", 200)
            if isinstance(status, int) and 200 <= status < 300:
                self.sink.connected(self.kind)
            return response

        seconds = random.randint(*WATCH_SECONDS)
        # ``opened`` declares no return type: the stream hands each event's object over as the
        # API server's JSON, not converted to a model and back
        stream: Iterator[dict[str, Any]] = current.stream(
            opened,
            self.kind.group,
            self.kind.version,
            self.kind.plural,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=seconds,
            _request_timeout=(CONNECT_SECONDS, seconds + 30),
        )
        return stream


def _describe(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"{err.status} {err.reason}"
    text = str(err)
    reason = getattr(err, "reason", None)
    return f"{type(err).__name__}: {reason or text}"[:300]
