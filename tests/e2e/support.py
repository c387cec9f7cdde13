"""What the end-to-end tests share: paths, the spec's example objects, and running policyctl."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "rules"
SHARED = ROOT.parent / "shared"
SPEC = SHARED / "spec"
CASES = SHARED / "conformance" / "cases"
NAMESPACE = "llama-demo"
MODEL_NAME = "llama-3-2-3b-instruct"
RUNTIME_NAME = "sglang-llama-3-2-3b"
RUNTIME_70B = "sglang-llama-3-3-70b"
MODEL_PATH = "/raid/models/meta/llama-3-2-3b-instruct"


def spec_manifest(page: str, kind: str, name: str) -> dict[str, Any]:
    """A manifest printed in a spec page (a block from ``apiVersion:`` to a blank line)."""
    (path,) = SPEC.glob(f"{page}_*.txt")
    for block in re.split(r"\n\s*\n", path.read_text()):
        if block.startswith("apiVersion:"):
            manifest: dict[str, Any] = yaml.safe_load(block)
            if manifest["kind"] == kind and manifest["metadata"]["name"] == name:
                return manifest
    raise LookupError(f"{path.name} prints no {kind} {name}")


def model_manifest() -> dict[str, Any]:
    """The spec's llama-3-2-3b-instruct ClusterBaseModel with the fields the model agent records."""
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": MODEL_NAME},
        "spec": {
            "modelFormat": {"name": "safetensors", "version": "1.0.0"},
            "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
            "modelArchitecture": "LlamaForCausalLM",
            "modelParameterSize": "3B",
            "storage": {"storageUri": "hf://meta-llama/Llama-3.2-3B-Instruct", "path": MODEL_PATH},
        },
    }


def isvc_manifest(**spec: Any) -> dict[str, Any]:
    """The spec's InferenceService that leaves out spec.runtime, with ``spec`` fields on top."""
    doc = spec_manifest("004", "InferenceService", MODEL_NAME)
    doc["spec"].update(spec)
    return doc


def write_yaml(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def policyctl(
    *args: str, address: str | None = None, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``policyctl [--address A] ARGS`` as a user runs it, in a process of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("POLICYD_ADDRESS", "POLICY_RENDER_ADDRESS")}
    cmd = [sys.executable, "-m", "clients.policyctl.main", *(["--address", address] if address else []), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=timeout)


def succeeded(result: subprocess.CompletedProcess[str]) -> None:
    no_traceback(result)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
