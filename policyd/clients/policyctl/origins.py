"""Where each part of a request came from — an object of a file, or a flag's value — so that an
error policyd names by its request path (``objects[0].spec.x``, ``inference_service.spec.modle``,
``delete[0]``) reads as kubectl's does: the file, the object (kind and name), the field."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Origin:
    where: str  # a file (x.yaml; x.yaml#1, its second document), or a flag with its value (--delete sr/x)
    what: str = ""  # the object as kubectl names it in its errors: ClusterServingRuntime "x"


@dataclass
class Origins:
    """Request paths (``catalog.objects[2]``) and where each came from."""

    paths: dict[str, Origin] = field(default_factory=dict)

    def add(self, path: str, origin: Origin) -> None:
        self.paths[path] = origin

    def line(self, path: str, description: str) -> str:
        """A violation of ``path`` as one line: ``x.yaml: Kind "n" is invalid: spec.f: description``;
        a path no part of the request was given for stays as policyd named it."""
        prefix = max((p for p in self.paths if _within(path, p)), key=len, default=None)
        if prefix is None:
            return f"{path}: {description}" if path else description
        origin = self.paths[prefix]
        # the object's own path: what the user wrote, not the request's envelope around it
        rest = path[len(prefix) :].lstrip(".").removeprefix("manifest").lstrip(".")
        head = f"{origin.where}: {origin.what}" if origin.what else origin.where
        if rest:
            return f"{head} is invalid: {rest}: {description}" if origin.what else f"{head}: {rest}: {description}"
        return f"{head}: {description}"


def _within(path: str, prefix: str) -> bool:
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")
