"""Generate the Python stubs of the contract into policyd/contract.

Run: python proto/generate.py [OUT_DIR]. tests/contract checks the checked-in
stubs are what this produces.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
PACKAGE = "policyd.contract"


def generate(out: Path) -> list[Path]:
    """Generate into ``out`` and rewrite imports to the installed package path."""
    import grpc_tools

    out.mkdir(parents=True, exist_ok=True)
    include = Path(grpc_tools.__file__).parent / "_proto"
    sources = sorted(str(p.relative_to(PROTO_DIR)) for p in PROTO_DIR.rglob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"-I{include}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *sources,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    written: list[Path] = []
    nested = out / "ome" / "policy" / "v1"
    for path in sorted(nested.iterdir()):
        # The stubs live flat in policyd.contract, not under an ``ome`` top-level package.
        text = re.sub(r"\bfrom ome\.policy\.v1 import", f"from {PACKAGE} import", path.read_text())
        text = re.sub(r"\bimport ome\.policy\.v1\.(\w+)", rf"import {PACKAGE}.\1", text)
        text = text.replace("ome.policy.v1.resources_pb2", f"{PACKAGE}.resources_pb2")
        target = out / path.name
        target.write_text(text)
        written.append(target)
    for leftover in sorted(out.joinpath("ome").rglob("*"), reverse=True):
        leftover.unlink() if leftover.is_file() else leftover.rmdir()
    out.joinpath("ome").rmdir()
    init = out / "__init__.py"
    init.write_text('"""Generated gRPC contract of policyd (proto/ome/policy/v1). Do not edit."""\n')
    (out / "py.typed").write_text("")
    return [*written, init]


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "policyd" / "contract")
