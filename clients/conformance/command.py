"""policyctl conformance DIR…: every case through a real daemon and renderer over real sockets."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from clients.conformance.cases import case_files, load_case
from clients.conformance.processes import StartError, serving
from clients.conformance.runner import Stubs, run_case
from clients.policyctl.connection import policy_stub, renderer_stub


def run(args: argparse.Namespace) -> int:
    files = case_files(args.directories)
    missing = [d for d in args.directories if not d.exists()]
    for d in missing:
        print(f"FAIL {d}: no such file or directory")
    with ExitStack() as stack:
        try:
            address = args.address or stack.enter_context(
                serving(
                    "policyd.server.main",
                    [*(["--rules", str(args.rules)] if args.rules else []), "--log-level", "warning"],
                    "127.0.0.1:0",
                )
            )
            renderer = args.renderer or stack.enter_context(
                serving("clients.renderer.main", [], "unix:{tmp}/render.sock")
            )
        except StartError as err:
            print(f"cannot start: {err}", file=sys.stderr)
            print(f"0 passed, {len(files) + len(missing)} failed")
            return 1
        stubs = Stubs(policy_stub(address), renderer_stub(renderer))
        passed = failed = 0
        for path in files:
            case = load_case(path)
            problems = run_case(case, stubs)
            if problems:
                failed += 1
                print(f"FAIL {case.name} ({path}): " + "; ".join(problems))
            else:
                passed += 1
                print(f"PASS {case.name}")
    failed += len(missing)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not files else 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("conformance", help="run conformance case directories through a real daemon")
    p.add_argument("directories", nargs="+", type=Path)
    p.add_argument("--address", help="use this running policyd instead of starting one")
    p.add_argument("--renderer", help="use this running renderer instead of starting one")
    p.add_argument("--rules", type=Path, help="rules directory for the daemon it starts")
    p.set_defaults(func=run)
