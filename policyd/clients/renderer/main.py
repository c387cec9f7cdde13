"""policy-render: the renderer sidecar, serving RendererService on a unix socket or TCP."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from policyd import version
from policyd.clients.renderer.service import RendererServicer
from policyd.contract import render_pb2, render_pb2_grpc
from policyd.edge.gate import Gate
from policyd.edge.limits import Limits
from policyd.process.exiting import exit_now
from policyd.process.grpc_server import (
    ListenError,
    add_health,
    add_security_flags,
    announce,
    bind,
    check_exposure,
    new_server,
    parse_listen,
    stop_signal,
    wait_for_stop_signal,
)
from policyd.process.tls import ServerTls, TlsError, files_of


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="policy-render", description=__doc__)
    p.add_argument("--version", action="version", version=version.line("policy-render"))
    p.add_argument("--listen", default="unix:/tmp/policy-render.sock", help="unix:PATH or host:port")
    p.add_argument("--ready-file", type=Path, help="write the bound address here once serving")
    add_security_flags(p)
    args = p.parse_args(argv)
    service = render_pb2.DESCRIPTOR.services_by_name["RendererService"].full_name
    limits = Limits()
    gate = Gate((service,), limits)
    server = new_server(4, limits.max_message_bytes, limits.max_concurrent, [gate])
    render_pb2_grpc.add_RendererServiceServicer_to_server(RendererServicer(), server)
    health_servicer = add_health(server, [service])
    try:
        files = files_of(args.tls_cert, args.tls_key, args.tls_client_ca)
        credentials = ServerTls(files).credentials() if files is not None else None
        listen = parse_listen(args.listen)
        check_exposure(listen, credentials is not None, args.insecure)
        address = bind(server, listen, credentials)
    except TlsError as err:
        print(f"policy-render: cannot start: {err}", file=sys.stderr)
        return 2
    except ListenError as err:
        print(f"policy-render: cannot listen on {err}", file=sys.stderr)
        return 2
    server.start()
    stopping = stop_signal()
    announce(address, args.ready_file)
    wait_for_stop_signal(stopping, server, health_servicer, args.shutdown_grace, gate.drain)
    return exit_now(0)


if __name__ == "__main__":
    sys.exit(main())
