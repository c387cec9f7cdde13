"""policyctl's own config file, as kubeconfig is kubectl's: named contexts, each a policyd address
and its TLS files, and the current one, so that the flags need not be on every call. The file
is ``$POLICYCTL_CONFIG``, else ``$XDG_CONFIG_HOME/policyd/config`` (``~/.config/policyd/config``);
flags win over the environment (``POLICYD_ADDRESS``), which wins over the context.

    current-context: prod
    contexts:
    - name: prod
      context: {address: policyd.ome.svc:50051, tls-ca: /etc/policyd/ca.crt}
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import yaml

from policyd.clients.policyctl.inputs import InputError
from policyd.clients.policyctl.output import Column, Result

# a context's settings: the key in the file, and the flag (argparse's dest) each stands for
SETTINGS = {"address": "address", "tls-ca": "tls_ca", "tls-cert": "tls_cert", "tls-key": "tls_key"}
PATHS = ("tls-ca", "tls-cert", "tls-key")


def path() -> Path:
    if os.environ.get("POLICYCTL_CONFIG"):
        return Path(os.environ["POLICYCTL_CONFIG"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "policyd" / "config"


def load() -> dict[str, Any]:
    """The file's content ({} when there is none); InputError naming it when it is no config."""
    file = path()
    try:
        content = yaml.safe_load(file.read_text()) if file.exists() else {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise InputError(f"policyctl config {file}: {err}") from None
    if content is None:
        return {}
    contexts = content.get("contexts") if isinstance(content, dict) else None
    if not isinstance(content, dict) or not isinstance(contexts or [], list):
        raise InputError(f"policyctl config {file}: expected current-context and a list of contexts")
    for entry in contexts or []:
        if not isinstance(entry, dict) or not entry.get("name") or not isinstance(entry.get("context") or {}, dict):
            raise InputError(f"policyctl config {file}: each context has a name and a context mapping")
    return content


def _contexts(content: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(e["name"]): dict(e.get("context") or {}) for e in content.get("contexts") or []}


def settings(name: str | None) -> dict[str, Any]:
    """The chosen context's settings as flags (dest → value): ``name``'s, else the current one's."""
    content = load()
    contexts = _contexts(content)
    chosen = name or content.get("current-context")
    if not chosen:
        return {}
    if chosen not in contexts:
        raise InputError(f'context "{chosen}" is not in policyctl config {path()} (policyctl config get-contexts)')
    given = contexts[chosen]
    unknown = sorted(set(given) - set(SETTINGS))
    if unknown:
        raise InputError(f'context "{chosen}" in {path()}: unknown settings {", ".join(unknown)}')
    return {SETTINGS[k]: Path(v) if k in PATHS else str(v) for k, v in given.items() if v}


def apply(args: argparse.Namespace, given: set[str]) -> None:
    """Fill what the flags did not set from the context, the address after ``POLICYD_ADDRESS``."""
    for dest, value in settings(args.policyd_context).items():
        if dest in given or (dest == "address" and os.environ.get("POLICYD_ADDRESS")):
            continue
        setattr(args, dest, value)


def _save(content: dict[str, Any]) -> None:
    file = path()
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(yaml.safe_dump(content, sort_keys=False))


def get_contexts(args: argparse.Namespace) -> Result:
    content = load()
    current = content.get("current-context")
    contexts = _contexts(content)
    items = [{"name": n, "current": n == current, "context": c} for n, c in contexts.items()]
    # CURRENT is blank but for one, as kubectl's (an empty cell would read <none>)
    rows = [("*" if n == current else " ", n, c.get("address", ""), c.get("tls-ca", "")) for n, c in contexts.items()]
    return Result(
        {"current-context": current, "contexts": items},
        [Column("CURRENT"), Column("NAME"), Column("ADDRESS"), Column("TLS CA")],
        rows,
        items=items,
        names=list(contexts),
    )


def current_context(args: argparse.Namespace) -> Result:
    current = load().get("current-context")
    if not current:
        return Result(None, errors=["current-context is not set"], code=1)
    return Result({"current-context": current}, text=str(current), default="text")


def use_context(args: argparse.Namespace) -> Result:
    content = load()
    if args.context_name not in _contexts(content):
        return Result(None, errors=[f'no context exists with the name: "{args.context_name}"'], code=1)
    content["current-context"] = args.context_name
    _save(content)
    return Result({"current-context": args.context_name}, text=f'Switched to context "{args.context_name}".')


def set_context(args: argparse.Namespace) -> Result:
    """The context's settings from --address and the TLS flags given with it; the rest kept."""
    content = load()
    entries: list[dict[str, Any]] = content.setdefault("contexts", [])
    entry = next((e for e in entries if e["name"] == args.context_name), None)
    action = "modified" if entry else "created"
    if entry is None:
        entry = {"name": args.context_name, "context": {}}
        entries.append(entry)
    context = entry.setdefault("context", {})
    for key, dest in SETTINGS.items():
        value = args.address_given if dest == "address" else getattr(args, dest, None)
        if value is not None:
            context[key] = str(Path(value).resolve()) if key in PATHS else value
    _save(content)
    return Result({"name": args.context_name, "context": context}, text=f'Context "{args.context_name}" {action}.')
