"""Channels to policyd and the renderer, and turning gRPC errors into messages."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import grpc

from policyd.contract import policy_pb2_grpc, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.resources.manifests import load_documents

DEFAULT_ADDRESS = os.environ.get("POLICYD_ADDRESS", "127.0.0.1:50051")
DEFAULT_RENDERER = os.environ.get("POLICY_RENDER_ADDRESS", "unix:/tmp/policy-render.sock")


def policy_stub(address: str) -> policy_pb2_grpc.PolicyServiceStub:
    return policy_pb2_grpc.PolicyServiceStub(grpc.insecure_channel(address))


def renderer_stub(address: str) -> render_pb2_grpc.RendererServiceStub:
    return render_pb2_grpc.RendererServiceStub(grpc.insecure_channel(address))


def read_manifests(paths: list[Path]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
        docs.extend(load_documents(text, str(path)))
    return docs


def as_objects(docs: list[dict[str, Any]]) -> list[rpb.Object]:
    return [rpb.Object(manifest=json.dumps(d)) for d in docs]


def rpc_error(err: grpc.RpcError, address: str) -> str:
    code = err.code()
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"cannot reach policyd at {address} (start it with `policyd`, or pass --address)"
    return f"{code.name}: {err.details()}"
