"""policyctl conformance DIR…: every case through a real daemon and renderer over real sockets."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from policyd.clients import channels
from policyd.clients.policyctl.conformance.cases import case_files, load_case
from policyd.clients.policyctl.conformance.daemons import StartError, serving
from policyd.clients.policyctl.conformance.runner import Stubs, run_case
from policyd.clients.policyctl.connection import PLAINTEXT, policy_stub, renderer_stub
from policyd.clients.policyctl.output import Result


def run(args: argparse.Namespace) -> Result:
    """One line per case as it runs (the default view); -o json/yaml/name/jsonpath once all ran.
    With --address, the cases run on that daemon instead of one started for them."""
    stream = args.output is None
    cases: list[dict[str, Any]] = []

    def record(name: str, path: Path | None, problems: list[str]) -> None:
        cases.append({"name": name, "file": str(path or name), "passed": not problems, "problems": problems})
        if stream:
            print(f"PASS {name}" if not problems else f"FAIL {name} ({path}): " + "; ".join(problems), flush=True)

    files = case_files(args.directories)
    for d in args.directories:
        if not d.exists():
            record(str(d), d, ["no such file or directory"])
    with ExitStack() as stack:
        try:
            address = args.address_given or stack.enter_context(
                serving(
                    "policyd.daemon.main",
                    [*(["--rules", str(args.rules)] if args.rules else []), "--log-level", "warning"],
                    "127.0.0.1:0",
                )
            )
            renderer = args.renderer or stack.enter_context(
                serving("policyd.clients.renderer.main", [], "unix:{tmp}/render.sock")
            )
        except StartError as err:
            print(f"cannot start: {err}", file=sys.stderr)
            for path in files:
                record(str(path), path, ["not run: the daemon or the renderer did not start"])
        else:
            connection = channels.of(args) if args.address_given else PLAINTEXT  # its own daemon is plaintext
            stubs = Stubs(policy_stub(address, connection), renderer_stub(renderer, connection))
            for path in files:
                case = load_case(path)
                record(case.name, path, run_case(case, stubs))
    passed = sum(1 for c in cases if c["passed"])
    failed = len(cases) - passed
    summary = f"{passed} passed, {failed} failed"
    return Result(
        {"cases": cases, "passed": passed, "failed": failed},
        names=[c["name"] for c in cases],
        text=summary,
        default="text",
        code=1 if failed or not files else 0,
    )


def add_parser(sub: argparse._SubParsersAction[Any], parents: list[Any]) -> None:
    text = "run conformance case directories through a real daemon and renderer (started for them)"
    examples = (
        "  policyctl conformance ../shared/conformance/cases tests/conformance-cases\n"
        "  policyctl conformance cases/ --address 127.0.0.1:50051 --renderer unix:/tmp/policy-render.sock\n"
        "  policyctl conformance cases/ -o json     # once all ran: each case, passed or its problems"
    )
    p = sub.add_parser(
        "conformance",
        help=text,
        description=text,
        epilog=f"Examples:\n{examples}",
        parents=parents,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "directories", nargs="+", type=Path, metavar="DIR", help="directories (searched recursively) or case files"
    )
    p.add_argument("--renderer", help="use this running renderer instead of starting one")
    p.add_argument("--rules", type=Path, help="rules directory for the daemon it starts")
    p.set_defaults(func=run)
