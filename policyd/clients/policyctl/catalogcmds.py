"""policyctl apply, delete and status: the running daemon's catalog, as kubectl shows a cluster's.

An object applied or deleted over the API that the watched catalog directory also has overrides
the directory's object until that object changes in the directory (or policyd restarts, unless
its --state-dir keeps the change); apply and delete warn when that happens, and status lists
every such override."""

from __future__ import annotations

import argparse
import time

from policyd.clients.policyctl import inputs
from policyd.clients.policyctl.commands import UsageError, caller
from policyd.clients.policyctl.connection import as_objects
from policyd.clients.policyctl.kinds import GROUP, UnknownKind, by_kind, catalog_kind, object_name
from policyd.clients.policyctl.output import Column, Result, as_dict, table
from policyd.contract import policy_pb2 as pb


def _name(key: pb.ObjectKey) -> str:
    return object_name(key.kind, key.name)


def _resource(kind: str) -> str:
    known = by_kind(kind)
    return known.resource if known else kind


def _plural(kind: str) -> str:
    known = by_kind(kind)
    return f"{known.plural}.{GROUP}" if known else kind


def _lasts(kept: bool) -> str:
    """Until when an override holds: a policyd with --state-dir keeps it across restarts."""
    if kept:
        return "until the object changes there (policyd's --state-dir keeps it across restarts)"
    return "until the object changes there, or policyd restarts"


def _override_warning(change: pb.ObjectChange) -> str:
    return (
        f"{_name(change.key)} is also in the watched catalog directory ({change.overrides_file}): "
        f"this change holds {_lasts(change.kept)}"
    )


def apply(args: argparse.Namespace) -> Result:
    if not args.filename:
        raise UsageError("must specify -f FILENAME")
    docs = inputs.read(args.filename, args.namespace, args.recursive)
    if not docs:
        raise inputs.InputError("no objects passed to apply")
    inputs.sent_as(args.origins, "objects", docs)
    call = caller(args)
    reply: pb.ApplyObjectsResponse = call(
        "ApplyObjects", pb.ApplyObjectsRequest(objects=as_objects([d.manifest for d in docs]))
    )
    lines = [f"{_name(c.key)} {c.action}" for c in reply.changes]
    data = as_dict(reply)
    return Result(
        data,
        [Column("NAME"), Column("ACTION"), Column("OVERRIDES", wide=True)],
        [(_name(c.key), c.action, c.overrides_file) for c in reply.changes],
        items=data["changes"],
        names=[_name(c.key) for c in reply.changes],
        text="\n".join(lines),
        default="text",
        # an unchanged object changes nothing the directory serves: nothing to warn about
        warnings=[
            *call.warnings,
            *(_override_warning(c) for c in reply.changes if c.overrides_file and c.action != "unchanged"),
        ],
    )


def _keys(args: argparse.Namespace) -> list[pb.ObjectKey]:
    """From -f, ``KIND NAME…`` or ``KIND/NAME…``; the namespace from -n (else ``default``) for namespaced kinds."""
    if args.filename:
        if args.names:
            raise UsageError("give either -f FILENAME or KIND NAME, not both")
        docs = inputs.read(args.filename, args.namespace, args.recursive)
        if not docs:
            raise inputs.InputError("no objects passed to delete")
        keys = []
        for d in docs:
            kind = catalog_kind(d.kind)  # inputs.read took catalog kinds only
            namespace = str(d.manifest.get("metadata", {}).get("namespace") or "") if kind.namespaced else ""
            keys.append(pb.ObjectKey(kind=kind.name, namespace=namespace, name=d.name))
        return keys
    words = list(args.names)
    if not words:
        raise UsageError("must specify -f FILENAME, or KIND NAME")
    try:
        if "/" in words[0]:
            pairs = []
            for word in words:
                kind_text, _, name = word.partition("/")
                pairs.append((catalog_kind(kind_text), name))
        else:
            kind = catalog_kind(words[0])
            if len(words) < 2:
                raise UsageError(f"must specify the name of the {kind.name} to delete")
            pairs = [(kind, name) for name in words[1:]]
    except UnknownKind as err:
        raise inputs.InputError(str(err)) from None
    namespace = args.namespace or "default"
    return [pb.ObjectKey(kind=k.name, namespace=namespace if k.namespaced else "", name=n) for k, n in pairs]


def delete(args: argparse.Namespace) -> Result:
    keys = _keys(args)
    call = caller(args)
    reply: pb.DeleteObjectsResponse = call("DeleteObjects", pb.DeleteObjectsRequest(keys=keys))
    deleted = [c for c in reply.changes if c.action == "deleted"]
    missing = [c for c in reply.changes if c.action == "not_found"]
    errors = (
        []
        if args.ignore_not_found
        else [f'Error from server (NotFound): {_plural(c.key.kind)} "{c.key.name}" not found' for c in missing]
    )
    data = as_dict(reply)
    return Result(
        data,
        [Column("NAME"), Column("ACTION"), Column("OVERRIDES", wide=True)],
        [(_name(c.key), c.action, c.overrides_file) for c in reply.changes],
        items=data["changes"],
        names=[_name(c.key) for c in deleted],
        text="\n".join(f'{_resource(c.key.kind)} "{c.key.name}" deleted' for c in deleted),
        default="text",
        warnings=[*call.warnings, *(_override_warning(c) for c in deleted if c.overrides_file)],
        errors=errors,
        code=1 if errors else 0,
    )


def when(seconds: float, now: float | None = None) -> str:
    """A time as people read it: UTC, and how long ago (as kubectl's AGE column)."""
    if not seconds:
        return ""
    age = max(0, int((now or time.time()) - seconds))
    ago = next(
        (f"{age // unit}{suffix}" for unit, suffix in ((86400, "d"), (3600, "h"), (60, "m")) if age >= unit),
        f"{age}s",
    )
    return f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(seconds))} ({ago} ago)"


def _cluster_heading(reply: pb.GetStatusResponse) -> str:
    """What a policyd that reads the cluster itself says of its sync: listing, in sync, or stale since when."""
    unsynced = [k.kind for k in reply.kinds if not k.synced]
    if reply.stale_since_unix_seconds:
        state = f"STALE since {when(reply.stale_since_unix_seconds)}: {reply.stale_reason}"
        if not unsynced:
            state += " (the last synced catalog serves)"
    elif unsynced:
        state = f"LISTING: not serving until every kind is synced ({', '.join(unsynced)} not yet)"
    else:
        state = "IN SYNC"
    return f"CLUSTER (policyd --cluster): {state}"


def status(args: argparse.Namespace) -> Result:
    call = caller(args)
    reply: pb.GetStatusResponse = call("GetStatus", pb.GetStatusRequest())
    a = reply.last_attempt
    reload = f"{'ok' if a.ok else 'refused'}, {when(a.at_unix_seconds)}"
    where = f"{a.file}{':' + str(a.line) if a.line else ''}{' rule ' + a.rule_id if a.rule_id else ''}"
    row = (
        reply.revisions.rules_revision,
        reply.revisions.catalog_revision,
        reply.runtimes,
        reply.models,
        reply.inference_services,
        reply.accelerator_classes,
        len(reply.catalog_errors),
        len(reply.overrides),
        reload,
        a.error,
        where,
    )
    footer = []
    if reply.overrides:
        overrides = [(_name(o.key), o.action, when(o.at_unix_seconds), o.file) for o in reply.overrides]
        footer += ["", f"OVERRIDES OF THE WATCHED DIRECTORY ({_lasts(all(o.kept for o in reply.overrides))})"]
        footer.append(table(("OBJECT", "ACTION", "AT", "FILE"), overrides))
    if reply.catalog_source == "cluster":
        footer += ["", _cluster_heading(reply)]
        kinds = [
            (k.kind, "yes" if k.synced else "no", k.objects, k.refused, k.resource_version, k.lists, k.watches)
            for k in reply.kinds
        ]
        footer.append(table(("KIND", "SYNCED", "OBJECTS", "REFUSED", "RESOURCEVERSION", "LISTS", "WATCHES"), kinds))
    if reply.catalog_errors:
        heading = "REFUSED (kept out of the catalog)" if reply.catalog_source == "cluster" else "CATALOG ERRORS"
        footer += ["", heading, *reply.catalog_errors]
    if reply.endpoints:
        footer += ["", "ENDPOINTS (one a process: --address with them, comma-separated, balances calls over all)"]
        footer.append(",".join(reply.endpoints))
    columns = [Column(h) for h in ("RULES", "CATALOG", "RUNTIMES", "MODELS", "ISVCS", "ACCELERATORS")]
    columns += [Column(h) for h in ("ERRORS", "OVERRIDES", "LAST RELOAD")]
    columns += [Column("RELOAD ERROR", wide=True), Column("AT", wide=True)]
    data = as_dict(reply)
    return Result(
        data,
        columns,
        [row],
        items=[data],
        names=[_name(o.key) for o in reply.overrides],
        footer="\n".join(footer),
        warnings=call.warnings,
    )
