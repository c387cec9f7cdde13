"""policyctl health: the daemon's standard gRPC health check (grpc.health.v1, which policyd serves
on its port, outside --authz), so that a person or a script needs no grpcurl to ask it."""

from __future__ import annotations

import argparse

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from policyd.clients import channels
from policyd.clients.policyctl.inputs import InputError
from policyd.clients.policyctl.output import Column, Result

SERVING = health_pb2.HealthCheckResponse.SERVING


def health(args: argparse.Namespace) -> Result:
    """SERVING (exit 0) or what the daemon answers instead (NOT_SERVING while it stops: exit 1)."""
    stub = health_pb2_grpc.HealthStub(channels.of(args).channel(args.address))
    try:
        reply = stub.Check(health_pb2.HealthCheckRequest(service=args.service))
    except grpc.RpcError as err:
        if isinstance(err, grpc.Call) and err.code() == grpc.StatusCode.NOT_FOUND:
            raise InputError(f'policyd at {args.address} has no service "{args.service}" to check') from None
        raise  # unreachable and the rest: the words every command uses
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    data = {"service": args.service, "status": status}
    return Result(
        data,
        [Column("STATUS"), Column("SERVICE", wide=True)],
        [(status, args.service)],
        items=[data],
        text=status,
        default="text",
        code=0 if reply.status == SERVING else 1,
    )
