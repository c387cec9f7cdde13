"""policyctl version: the client's version and the daemon's (GetStatus carries it), as kubectl
version shows its own and the API server's."""

from __future__ import annotations

import argparse

from policyd import version as package
from policyd.clients.policyctl.commands import caller
from policyd.clients.policyctl.output import Result
from policyd.contract import policy_pb2 as pb


def version(args: argparse.Namespace) -> Result:
    data = {"client": package.VERSION}
    lines = [f"client: policyctl {package.VERSION}"]
    if not args.client:
        reply: pb.GetStatusResponse = caller(args)("GetStatus", pb.GetStatusRequest())
        # a daemon older than the field answers without it
        data["daemon"] = reply.version
        lines.append(f"daemon: policyd {reply.version or 'unknown (it does not say: older than this policyctl)'}")
    return Result(data=data, text="\n".join(lines))
