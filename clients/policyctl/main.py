"""policyctl: runtime selection for OME, as kubectl users expect it (also `kubectl policy …`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import NoReturn

import grpc

from clients import channels
from clients.policyctl import catalogcmds, commands, health, rulecmds, versioncmd, whatifcmds
from clients.policyctl.conformance import command as conformance
from clients.policyctl.connection import DEFAULT_ADDRESS, DEFAULT_RENDERER, rpc_error
from clients.policyctl.inputs import InputError
from clients.policyctl.origins import Origins
from clients.policyctl.output import OutputError, Result, error_line, output_format, show
from policyd.errors import InvalidInput


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """kubectl's two lines for a usage error, exit 2."""
        self.exit(2, f"error: {message}\nSee '{self.prog} --help' for usage.\n")


_VALIDATION = {"strict": "Strict", "true": "Strict", "warn": "Warn", "ignore": "Ignore", "false": "Ignore"}


def _validation(text: str) -> str:
    """kubectl's --validate values: strict (or true), warn, ignore (or false)."""
    mode = _VALIDATION.get(text.lower())
    if mode is None:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: one of strict, warn, ignore, true, false")
    return mode


def _format(text: str) -> str:
    try:
        return output_format(text)
    except OutputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _common() -> _Parser:
    """The options every command takes, anywhere on the line (before or after the command)."""
    p = _Parser(add_help=False, argument_default=argparse.SUPPRESS)
    p.add_argument(
        "--address",
        help=f"policyd address (env POLICYD_ADDRESS, else {DEFAULT_ADDRESS}); host:port addresses, comma-separated, "
        "balance calls over them (a --processes daemon's, as policyctl status lists them)",
    )
    p.add_argument("-n", "--namespace", help="namespace of namespaced objects without one (else: default)")
    p.add_argument("-o", "--output", type=_format, help="table, wide, name, json, yaml or jsonpath=TEMPLATE")
    p.add_argument(
        "--validate",
        type=_validation,
        help="unknown manifest fields: strict or true (refused), warn (the default: warnings), ignore or false",
    )
    p.add_argument("--strict", dest="validate", action="store_const", const="Strict", help="same as --validate=strict")
    p.add_argument("--kubeconfig", help="kubeconfig for reading InferenceServices from the cluster")
    p.add_argument("--context", help="kubeconfig context")
    channels.add_flags(p)
    return p


def _files(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("-f", "--filename", type=Path, action="append", help=f"{what}: a file, a directory, or - (stdin)")
    p.add_argument("-R", "--recursive", action="store_true", help="read -f directories recursively")


COMMON_DEFAULTS = {
    "address": None,
    "namespace": None,
    "output": None,
    "validate": "Warn",
    "kubeconfig": None,
    "context": None,
}
Command = Callable[[argparse.Namespace], Result]


def _decision(
    sub: argparse._SubParsersAction[_Parser], common: _Parser, name: str, help_text: str, func: Command
) -> _Parser:
    p: _Parser = sub.add_parser(name, help=help_text, parents=[common], description=help_text)
    p.add_argument("name", nargs="?", help="an InferenceService in the cluster (kubeconfig as kubectl finds it)")
    _files(p, "the InferenceService, with any runtimes and models for this request")
    p.add_argument("--isvc", help="the same as NAME: an InferenceService in the cluster")
    p.add_argument(
        "--objects", type=Path, action="append", help="extra runtimes/models for this request only (repeatable)"
    )
    p.add_argument("--isolated", action="store_true", help="use only these objects, not the daemon's catalog")
    p.add_argument("--lookup", choices=("v1.3", "v1.2.2"), default="v1.3", help="named-runtime lookup order")
    p.set_defaults(func=func)
    return p


def parser() -> _Parser:
    common = _common()
    # as a kubectl plugin (kubectl-policy on PATH), kubectl runs it for `kubectl policy …`
    prog = "kubectl policy" if Path(sys.argv[0]).name == "kubectl-policy" else "policyctl"
    root = _Parser(prog=prog, description=__doc__, parents=[common])
    root.add_argument("--version", action="version", version=f"{prog} {metadata.version('policyd')}")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = _decision(sub, common, "explain", "every runtime in scope with its verdict and reason", commands.explain)
    p.add_argument("--model", help="explain for a model alone (as kubectl ome runtime explain --model)")
    p.add_argument("--model-kind", default="ClusterBaseModel", choices=("ClusterBaseModel", "BaseModel"))
    _decision(sub, common, "select", "the runtime OME would auto-select", commands.select)
    _decision(sub, common, "resolve", "the runtime an InferenceService names", commands.resolve)
    _decision(sub, common, "effective", "each component's deployment mode and the rule that set it", commands.effective)
    p = _decision(
        sub, common, "render", "the Deployments / LeaderWorkerSets a user would kubectl apply", commands.render
    )
    p.add_argument("--accelerator-class", help="accelerator class the engine and decoder were placed on")
    p.add_argument("--renderer", default=DEFAULT_RENDERER, help="renderer address (env POLICY_RENDER_ADDRESS)")

    model = sub.add_parser("model", help="model metadata", parents=[common])
    msub = model.add_subparsers(dest="model_command", required=True, metavar="COMMAND", parser_class=_Parser)
    p = msub.add_parser(
        "inspect", help="the BaseModel fields OME records from model_index.json / config.json", parents=[common]
    )
    p.add_argument("path", type=Path, help="a model directory, or a model_index.json / config.json file")
    p.add_argument(
        "--base-model", type=Path, help="a BaseModel manifest: only its empty fields are filled, all printed"
    )
    p.set_defaults(func=commands.model_inspect)

    rules = sub.add_parser("rules", help="rule files", parents=[common])
    rsub = rules.add_subparsers(dest="rules_command", required=True, metavar="COMMAND", parser_class=_Parser)
    p = rsub.add_parser("check", help="static checks of a rules directory", parents=[common])
    p.add_argument("directory", type=Path)
    p.set_defaults(func=rulecmds.check)
    p = rsub.add_parser("test", help="run the tests stored with the rules", parents=[common])
    p.add_argument("directory", type=Path)
    p.set_defaults(func=rulecmds.test)
    rsub.add_parser("fields", help="the fact fields rules may test", parents=[common]).set_defaults(
        func=rulecmds.fields
    )

    conformance.add_parser(sub, [common])

    text = "policyctl's version and the daemon's"
    p = sub.add_parser("version", help=text, parents=[common], description=text)
    p.add_argument("--client", action="store_true", help="only policyctl's: ask no daemon")
    p.set_defaults(func=versioncmd.version)
    p = sub.add_parser("status", help="revisions, catalog size and errors, overrides, last reload", parents=[common])
    p.set_defaults(func=catalogcmds.status)
    text = "the daemon's gRPC health: SERVING (exit 0) or NOT_SERVING (exit 1)"
    p = sub.add_parser("health", help=text, parents=[common], description=text)
    p.add_argument("--service", default="", help="a service's health (ome.policy.v1.PolicyService), else the server's")
    p.set_defaults(func=health.health)
    p = sub.add_parser("apply", help="create or replace catalog objects in the running daemon", parents=[common])
    _files(p, "manifests to apply")
    p.set_defaults(func=catalogcmds.apply)
    p = sub.add_parser("delete", help="remove catalog objects from the running daemon", parents=[common])
    p.add_argument(
        "names", nargs="*", metavar="KIND/NAME", help="KIND NAME… or KIND/NAME…, e.g. csr my-runtime or sr/my-runtime"
    )
    _files(p, "manifests of the objects to delete")
    p.add_argument("--ignore-not-found", action="store_true", help="no error for an object that is not there")
    p.set_defaults(func=catalogcmds.delete)
    _whatif(sub, common)
    return root


def _whatif(sub: argparse._SubParsersAction[_Parser], common: _Parser) -> None:
    offline = "offline: the catalog of this directory with the bundled rules, instead of the daemon's"
    text = "what would change every InferenceService's decision, before the change is made (nothing is applied)"
    p = sub.add_parser("diff", help=text, parents=[common], description=text)
    p.add_argument("--apply", type=Path, action="append", metavar="FILE", help="manifests that would be applied")
    p.add_argument("-R", "--recursive", action="store_true", help="read --apply directories recursively")
    p.add_argument(
        "--delete", action="append", metavar="KIND/NAME", help="an object that would be deleted (-n for namespaced)"
    )
    p.add_argument(
        "--rules", type=Path, metavar="DIR", help="the rules that would serve (extra rules or a whole policy)"
    )
    p.add_argument(
        "--isvc", type=Path, action="append", metavar="FILE", help="InferenceServices to decide besides the catalog's"
    )
    p.add_argument("--catalog", type=Path, metavar="DIR", help=offline)
    # as kubectl diff: 0 nothing changes, 1 something does, above 1 the command failed
    p.set_defaults(func=whatifcmds.diff, failed=2)
    text = "findings about the catalog, as the lint rules judge it"
    p = sub.add_parser("lint", help=text, parents=[common], description=text)
    p.add_argument("--catalog", type=Path, metavar="DIR", help=offline)
    p.add_argument("--rules", type=Path, metavar="DIR", help="judge with these rules (extra rules or a whole policy)")
    p.add_argument(
        "--severity", choices=whatifcmds.SEVERITIES, default="info", help="show findings of this severity and above"
    )
    p.set_defaults(func=whatifcmds.lint)


def _error(lines: list[str], code: int = 1) -> int:
    for line in lines:
        print(error_line(line), file=sys.stderr)
    return code


def _check_flags(args: argparse.Namespace) -> None:
    """Flags that are wrong together, whatever the command: usage errors, as argparse's own are."""
    if (getattr(args, "tls_cert", None) is None) != (getattr(args, "tls_key", None) is None):
        raise commands.UsageError("--tls-cert and --tls-key go together")


def main(argv: list[str] | None = None) -> int:
    root = parser()
    args = root.parse_args(argv)
    for name, default in COMMON_DEFAULTS.items():  # not set_defaults: the common actions are shared with every command
        if not hasattr(args, name):
            setattr(args, name, default)
    args.address_given = args.address
    args.address = args.address or DEFAULT_ADDRESS
    args.origins = Origins()  # each command says where the parts of its request came from
    try:
        _check_flags(args)
        result: Result = args.func(args)
        return show(result, args.output)
    except commands.UsageError as err:
        print(f"error: {err}\nSee '{root.prog} {args.command} --help' for usage.", file=sys.stderr)
        return 2
    except grpc.RpcError as err:
        return _error(rpc_error(err, args.address, args.origins), getattr(args, "failed", 1))
    except InvalidInput as err:  # policyd's own handlers, run offline: the same words as the daemon's answer
        return _error([args.origins.line(f, text) for f, text in err.violations], getattr(args, "failed", 1))
    except (InputError, OutputError, channels.TlsFlagError, channels.AddressError) as err:
        return _error([str(err)], getattr(args, "failed", 1))
    except KeyboardInterrupt:
        return 130  # as a shell reports a command ended by Ctrl-C; no traceback
    except BrokenPipeError:
        # stdout closed early (policyctl … | head): nothing more to say, and Python must not say it either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run() -> None:
    """The console scripts' entry point (policyctl and kubectl-policy)."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C while parsing arguments or starting up
        sys.exit(130)


if __name__ == "__main__":
    run()
