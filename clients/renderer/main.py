"""policy-render: the renderer sidecar, serving RendererService on a unix socket or TCP."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clients.renderer.service import RendererServicer
from policyd.contract import render_pb2, render_pb2_grpc
from policyd.grpc_process import ListenError, add_health, announce, bind, new_server, parse_listen, wait_for_stop_signal


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="policy-render", description=__doc__)
    p.add_argument("--listen", default="unix:/tmp/policy-render.sock", help="unix:PATH or host:port")
    p.add_argument("--ready-file", type=Path, help="write the bound address here once serving")
    args = p.parse_args(argv)
    server = new_server(4)
    render_pb2_grpc.add_RendererServiceServicer_to_server(RendererServicer(), server)
    health_servicer = add_health(server, [render_pb2.DESCRIPTOR.services_by_name["RendererService"].full_name])
    try:
        address = bind(server, parse_listen(args.listen))
    except ListenError as err:
        print(f"policy-render: cannot listen on {err}", file=sys.stderr)
        return 2
    server.start()
    announce(address, args.ready_file)
    wait_for_stop_signal(server, health_servicer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
