"""policyctl: explain, select, resolve, effective, render, model inspect, rules, conformance."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc

from clients.conformance import command as conformance
from clients.policyctl import commands, rulecmds
from clients.policyctl.connection import DEFAULT_ADDRESS, DEFAULT_RENDERER, rpc_error
from policyd.errors import InvalidInput


def _decision(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text)
    p.add_argument("-f", "--filename", type=Path, help="InferenceService manifest (- for stdin)")
    p.add_argument(
        "--objects", type=Path, action="append", help="extra runtimes/models for this request only (repeatable)"
    )
    p.add_argument("--isolated", action="store_true", help="use only --objects, not the daemon's catalog")
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument("--lookup", choices=("v1.3", "v1.2.2"), default="v1.3", help="named-runtime lookup order")
    return p


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="policyctl", description=__doc__)
    root.add_argument("--address", default=DEFAULT_ADDRESS, help="policyd address (env POLICYD_ADDRESS)")
    sub = root.add_subparsers(dest="command", required=True)

    p = _decision(sub, "explain", "every runtime in scope with its verdict and reason")
    p.add_argument("--model", help="explain for a model alone (as kubectl ome runtime explain --model)")
    p.add_argument("--model-kind", default="ClusterBaseModel", choices=("ClusterBaseModel", "BaseModel"))
    p.add_argument("-n", "--namespace", default="default")
    p.set_defaults(func=commands.explain)
    _decision(sub, "select", "the runtime OME would auto-select").set_defaults(func=commands.select)
    _decision(sub, "resolve", "the runtime an InferenceService names").set_defaults(func=commands.resolve)
    _decision(sub, "effective", "each component's deployment mode and the rule that set it").set_defaults(
        func=commands.effective
    )
    p = _decision(sub, "render", "the Deployments / LeaderWorkerSets a user would kubectl apply")
    p.add_argument("--accelerator-class", help="accelerator class the engine and decoder were placed on")
    p.add_argument("--renderer", default=DEFAULT_RENDERER, help="renderer address (env POLICY_RENDER_ADDRESS)")
    p.set_defaults(func=commands.render)

    model = sub.add_parser("model", help="model metadata").add_subparsers(dest="model_command", required=True)
    p = model.add_parser("inspect", help="the BaseModel fields OME records from model_index.json / config.json")
    p.add_argument("path", type=Path, help="a model directory, or a model_index.json / config.json file")
    p.add_argument("--base-model", type=Path, help="existing BaseModel manifest: only its empty fields are filled")
    p.add_argument("-o", "--output", choices=("json", "yaml"), default="yaml")
    p.set_defaults(func=commands.model_inspect)

    rules = sub.add_parser("rules", help="rule files").add_subparsers(dest="rules_command", required=True)
    p = rules.add_parser("check", help="static checks of a rules directory")
    p.add_argument("directory", type=Path)
    p.set_defaults(func=rulecmds.check)
    p = rules.add_parser("test", help="run the tests stored with the rules")
    p.add_argument("directory", type=Path)
    p.set_defaults(func=rulecmds.test)
    rules.add_parser("fields", help="the fact fields rules may test").set_defaults(func=rulecmds.fields)

    conformance.add_parser(sub)

    p = sub.add_parser("status", help="rules and catalog revisions, last reload attempt")
    p.add_argument("-o", "--output", choices=("json", "yaml"), default="yaml")
    p.set_defaults(func=commands.status)
    p = sub.add_parser("apply", help="add or replace catalog objects in the running daemon")
    p.add_argument("-f", "--filename", dest="files", type=Path, action="append", required=True)
    p.set_defaults(func=commands.apply)
    p = sub.add_parser("delete", help="remove a catalog object from the running daemon")
    p.add_argument("kind", choices=("ClusterServingRuntime", "ServingRuntime", "ClusterBaseModel", "BaseModel"))
    p.add_argument("name")
    p.add_argument("-n", "--namespace", default="")
    p.set_defaults(func=commands.delete)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except grpc.RpcError as err:
        print(f"error: {rpc_error(err, args.address)}", file=sys.stderr)
    except (commands.UsageError, InvalidInput, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
