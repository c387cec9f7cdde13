"""policyctl: runtime selection for OME, as kubectl users expect it (also `kubectl policy …`)."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import NoReturn, TypeAlias

import argcomplete
import grpc

from policyd.clients import channels
from policyd.clients.policyctl import (
    catalogcmds,
    commands,
    completion,
    config,
    health,
    rulecmds,
    versioncmd,
    whatifcmds,
)
from policyd.clients.policyctl.conformance import command as conformance
from policyd.clients.policyctl.connection import DEFAULT_ADDRESS, DEFAULT_RENDERER, rpc_error
from policyd.clients.policyctl.inputs import InputError
from policyd.clients.policyctl.origins import Origins
from policyd.clients.policyctl.output import FORMATS, OutputError, Printing, Result, error_line, output_format, show
from policyd.errors import InvalidInput


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """kubectl's two lines for a usage error, exit 2; for a mistyped command, kubectl's "Did you mean this?"."""
        mistyped = _INVALID_CHOICE.match(message)
        if mistyped and message.startswith("argument COMMAND"):
            word, choices = mistyped[1], re.findall(r"'([^']*)'", mistyped[2])
            close = difflib.get_close_matches(word, choices, n=3)
            hint = "".join(f"\t{c}\n" for c in close)
            self.exit(
                2,
                f'error: unknown command "{word}" for "{self.prog}"\n'
                + (f"\nDid you mean this?\n{hint}\n" if close else "")
                + f"Run '{self.prog} --help' for usage.\n",
            )
        self.exit(2, f"error: {message}\nSee '{self.prog} --help' for usage.\n")


_INVALID_CHOICE = re.compile(r"argument [^:]+: invalid choice: '([^']*)' \(choose from (.*)\)$")
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
        help=f"policyd address (else env POLICYD_ADDRESS, else the context's, else {DEFAULT_ADDRESS}); host:port "
        "addresses, comma-separated, balance calls over them (a --processes daemon's, as policyctl status lists them)",
    )
    p.add_argument(
        "--policyd-context",
        metavar="NAME",
        help="the context of policyctl's config to use (else its current-context): see policyctl config",
    )
    p.add_argument("-n", "--namespace", help="namespace of namespaced objects without one (else: default)")
    p.add_argument("-o", "--output", type=_format, help=f"one of {', '.join(FORMATS)}")
    p.add_argument("--no-headers", action="store_true", help="tables without their header (title, header, footer)")
    p.add_argument("--sort-by", metavar="JSONPATH", help="sort table rows by this field of each (e.g. .score)")
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


COMMON_FLAGS = ("address", "tls_ca", "tls_cert", "tls_key")  # what a context may set, unless the flag does
COMMON_DEFAULTS = {
    "address": None,
    "policyd_context": None,
    "namespace": None,
    "output": None,
    "no_headers": False,
    "sort_by": None,
    "validate": "Warn",
    "kubeconfig": None,
    "context": None,
}
Command = Callable[[argparse.Namespace], Result]
Sub: TypeAlias = "argparse._SubParsersAction[_Parser]"  # a string: subscriptable for mypy only


def _command(sub: Sub, parents: list[_Parser], name: str, text: str, examples: str) -> _Parser:
    """A command with its one-line help, as its description too, and kubectl's Examples section."""
    epilog = "Examples:\n" + "\n".join(f"  {line.strip()}" for line in examples.strip().splitlines())
    return sub.add_parser(
        name,
        help=text,
        description=text,
        epilog=epilog,
        parents=parents,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _decision(sub: Sub, common: _Parser, name: str, help_text: str, func: Command, examples: str) -> _Parser:
    p = _command(sub, [common], name, help_text, examples)
    p.add_argument(
        "name", nargs="?", metavar="NAME", help="an InferenceService in the cluster (kubeconfig as kubectl finds it)"
    )
    _files(p, "the InferenceService, with any runtimes and models for this request")
    p.add_argument(
        "--isvc", metavar="NAME", help="the same as NAME: an InferenceService in the cluster, by name (-f takes a file)"
    )
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
    root = _Parser(
        prog=prog,
        description=__doc__,
        parents=[common],
        epilog=f"Run '{prog} COMMAND --help' for a command's options and examples.",
    )
    root.add_argument("--version", action="version", version=f"{prog} {metadata.version('policyd')}")
    sub = root.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    isvc = "examples/inferenceservices/llama-3-2-3b.yaml"

    p = _decision(
        sub,
        common,
        "explain",
        "every runtime in scope with its verdict and reason",
        commands.explain,
        f"""
        policyctl explain -f {isvc}
        policyctl explain llama-3-2-3b-instruct -n llama-demo     # the InferenceService in the cluster
        policyctl explain --model qwen-image -n qwen-demo
        policyctl explain -f {isvc} -o custom-columns=RUNTIME:.name,SCORE:.score --sort-by .score
        """,
    )
    p.add_argument("--model", metavar="NAME", help="explain for a model alone (as kubectl ome runtime explain --model)")
    p.add_argument(
        "--model-kind",
        default="ClusterBaseModel",
        choices=("ClusterBaseModel", "BaseModel"),
        help="the kind of --model's model (default ClusterBaseModel; a BaseModel is in -n's namespace)",
    )
    _decision(
        sub,
        common,
        "select",
        "the runtime OME would auto-select",
        commands.select,
        f"""
        policyctl select -f {isvc}
        policyctl select -f {isvc} -o jsonpath='{{.ranking[0].name}}'
        policyctl select -f {isvc} --objects my-runtime.yaml --isolated   # only these runtimes
        """,
    )
    _decision(
        sub,
        common,
        "resolve",
        "the runtime an InferenceService names",
        commands.resolve,
        """
        policyctl resolve -f examples/inferenceservices/llama-3-2-1b-named.yaml
        policyctl resolve -f isvc.yaml --lookup v1.2.2     # v1.2.2's order: namespace first, kind ignored
        """,
    )
    _decision(
        sub,
        common,
        "effective",
        "each component's deployment mode and the rule that set it",
        commands.effective,
        """
        policyctl effective -f examples/inferenceservices/llama-3-70b-l40s.yaml
        policyctl effective llama-3-2-1b-instruct -n llama-demo -o yaml   # with the selection and inheritance
        """,
    )
    p = _decision(
        sub,
        common,
        "render",
        "the Deployments / LeaderWorkerSets a user would kubectl apply",
        commands.render,
        f"""
        policyctl render -f {isvc} > out.yaml && kubectl apply -f out.yaml
        policyctl render -f {isvc} --accelerator-class nvidia-l40s -o name
        """,
    )
    p.add_argument("--accelerator-class", help="accelerator class the engine and decoder were placed on")
    p.add_argument("--renderer", default=DEFAULT_RENDERER, help="renderer address (env POLICY_RENDER_ADDRESS)")

    text = "model metadata"
    model = _command(sub, [common], "model", text, "policyctl model inspect ./stable-diffusion-v1-5")
    msub = model.add_subparsers(dest="model_command", required=True, metavar="COMMAND", parser_class=_Parser)
    p = _command(
        msub,
        [common],
        "inspect",
        "the BaseModel fields OME records from model_index.json / config.json",
        """
        policyctl model inspect ./stable-diffusion-v1-5
        policyctl model inspect ./llama/config.json --base-model basemodel.yaml | policyctl apply -f -
        """,
    )
    p.add_argument(
        "path", type=Path, metavar="PATH", help="a model directory, or a model_index.json / config.json file"
    )
    p.add_argument(
        "--base-model", type=Path, help="a BaseModel manifest: only its empty fields are filled, all printed"
    )
    p.set_defaults(func=commands.model_inspect)

    rules = _command(sub, [common], "rules", "rule files: check, test, fields", "policyctl rules check rules")
    rsub = rules.add_subparsers(dest="rules_command", required=True, metavar="COMMAND", parser_class=_Parser)
    p = _command(
        rsub,
        [common],
        "check",
        "static checks of a rules directory (a directory of extra rules is checked beside the bundled ones)",
        "policyctl rules check rules\npolicyctl rules check rules/examples",
    )
    p.add_argument("directory", type=Path, metavar="DIR", help="the directory of rule files")
    p.set_defaults(func=rulecmds.check)
    p = _command(
        rsub,
        [common],
        "test",
        "run the tests stored with the rules (FAIL lines, then a count)",
        "policyctl rules test rules",
    )
    p.add_argument("directory", type=Path, metavar="DIR", help="the directory of rule files and their tests")
    p.set_defaults(func=rulecmds.test)
    p = _command(
        rsub,
        [common],
        "fields",
        "the fact fields rules may test, with their types and meaning",
        "policyctl rules fields\npolicyctl rules fields -o custom-columns=FIELD:.name,TYPE:.type --no-headers",
    )
    p.set_defaults(func=rulecmds.fields)

    conformance.add_parser(sub, [common])

    text = "policyctl's version and the daemon's"
    p = _command(sub, [common], "version", text, "policyctl version\npolicyctl version --client")
    p.add_argument("--client", action="store_true", help="only policyctl's: ask no daemon")
    p.set_defaults(func=versioncmd.version)
    p = _command(
        sub,
        [common],
        "status",
        "the daemon's revisions, catalog size and errors, overrides, last reload (and sync under --cluster)",
        "policyctl status\npolicyctl status -o yaml",
    )
    p.set_defaults(func=catalogcmds.status)
    p = _command(
        sub,
        [common],
        "health",
        "the daemon's gRPC health: SERVING (exit 0) or NOT_SERVING (exit 1)",
        "policyctl health\npolicyctl health --service ome.policy.v1.PolicyService",
    )
    p.add_argument("--service", default="", help="a service's health (ome.policy.v1.PolicyService), else the server's")
    p.set_defaults(func=health.health)
    p = _command(
        sub,
        [common],
        "apply",
        "create or replace catalog objects in the running daemon (not under policyd --cluster)",
        "policyctl apply -f examples/whatif/srt-llama-3-2-1b-transformers-4.47.yaml\n"
        "policyctl model inspect ./model --base-model bm.yaml | policyctl apply -f -",
    )
    _files(p, "manifests to apply")
    p.set_defaults(func=catalogcmds.apply)
    p = _command(
        sub,
        [common],
        "delete",
        "remove catalog objects from the running daemon",
        "policyctl delete clusterservingruntime srt-llama-3-2-1b-instruct\n"
        "policyctl delete servingruntime/my-runtime -n llama-demo\n"
        "policyctl delete -f my-runtime.yaml --ignore-not-found",
    )
    p.add_argument(
        "names",
        nargs="*",
        metavar="KIND/NAME",
        help="KIND NAME… or KIND/NAME…: a kind as OME's CRDs name it (clusterservingruntime, servingruntimes, isvc…)",
    )
    _files(p, "manifests of the objects to delete")
    p.add_argument("--ignore-not-found", action="store_true", help="no error for an object that is not there")
    p.set_defaults(func=catalogcmds.delete)
    _whatif(sub, common)
    _config(sub, common)
    p = _command(
        sub,
        [common],
        "completion",
        "the shell completion script for bash, zsh or fish",
        """
        source <(policyctl completion bash)                       # in ~/.bashrc
        policyctl completion zsh > "${fpath[1]}/_policyctl"
        policyctl completion fish > ~/.config/fish/completions/policyctl.fish
        """,
    )
    p.add_argument("shell", choices=completion.SHELLS, metavar="SHELL", help="bash, zsh or fish")
    p.set_defaults(func=completion.script)
    return root


def _whatif(sub: Sub, common: _Parser) -> None:
    offline = "offline: the catalog of this directory with the bundled rules, instead of the daemon's"
    text = "what would change every InferenceService's decision, before the change is made (nothing is applied)"
    p = _command(
        sub,
        [common],
        "diff",
        text,
        """
        policyctl diff --apply examples/whatif/srt-llama-3-2-1b-transformers-4.47.yaml
        policyctl diff --delete clusterservingruntime/srt-qwen-image
        policyctl diff --rules rules/examples --isvc examples/inferenceservices/qwen-image-pvc.yaml
        policyctl diff --catalog examples/catalog --rules rules/examples      # offline, no daemon
        """,
    )
    p.add_argument("--apply", type=Path, action="append", metavar="FILE", help="manifests that would be applied")
    p.add_argument("-R", "--recursive", action="store_true", help="read --apply directories recursively")
    p.add_argument(
        "--delete", action="append", metavar="KIND/NAME", help="an object that would be deleted (-n for namespaced)"
    )
    p.add_argument(
        "--rules", type=Path, metavar="DIR", help="the rules that would serve (extra rules or a whole policy)"
    )
    p.add_argument(
        "--isvc",
        type=Path,
        action="append",
        metavar="FILE",
        help="a file of InferenceServices to decide besides the catalog's (a file here: explain's and select's "
        "--isvc take a name in the cluster)",
    )
    p.add_argument("--catalog", type=Path, metavar="DIR", help=offline)
    # as kubectl diff: 0 nothing changes, 1 something does, above 1 the command failed
    p.set_defaults(func=whatifcmds.diff, failed=2)
    text = "findings about the catalog, as the lint rules judge it"
    p = _command(
        sub,
        [common],
        "lint",
        text,
        "policyctl lint\npolicyctl lint --severity warning\npolicyctl lint --catalog examples/catalog   # offline",
    )
    p.add_argument("--catalog", type=Path, metavar="DIR", help=offline)
    p.add_argument("--rules", type=Path, metavar="DIR", help="judge with these rules (extra rules or a whole policy)")
    p.add_argument(
        "--severity", choices=whatifcmds.SEVERITIES, default="info", help="show findings of this severity and above"
    )
    p.set_defaults(func=whatifcmds.lint)


def _config(sub: Sub, common: _Parser) -> None:
    text = f"policyctl's contexts (address and TLS files), in $POLICYCTL_CONFIG or {config.path()}"
    p = _command(
        sub,
        [common],
        "config",
        text,
        """
        policyctl config set-context prod --address policyd.ome.svc:50051 --tls-ca ca.crt
        policyctl config set-context prod --tls-cert me.crt --tls-key me.key     # a client certificate too
        policyctl config use-context prod
        policyctl config get-contexts
        policyctl status --policyd-context dev     # one call in another context
        """,
    )
    csub = p.add_subparsers(dest="config_command", required=True, metavar="COMMAND", parser_class=_Parser)
    name = "the context's name"
    p = _command(
        csub, [common], "get-contexts", "every context; * marks the current one", "policyctl config get-contexts"
    )
    p.set_defaults(func=config.get_contexts)
    p = _command(csub, [common], "current-context", "the current context's name", "policyctl config current-context")
    p.set_defaults(func=config.current_context)
    p = _command(csub, [common], "use-context", "make a context the current one", "policyctl config use-context prod")
    p.add_argument("context_name", metavar="NAME", help=name)
    p.set_defaults(func=config.use_context)
    p = _command(
        csub,
        [common],
        "set-context",
        "create a context, or change it: the settings given as --address, --tls-ca, --tls-cert, --tls-key",
        "policyctl config set-context prod --address policyd.ome.svc:50051 --tls-ca ca.crt",
    )
    p.add_argument("context_name", metavar="NAME", help=name)
    p.set_defaults(func=config.set_context)


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
    argcomplete.autocomplete(root)  # answers a shell's Tab (policyctl completion) and exits; nothing otherwise
    args = root.parse_args(argv)
    if args.command is None:  # bare policyctl: its help, as kubectl's
        root.print_help()
        return 0
    given = {name for name in COMMON_FLAGS if hasattr(args, name)}
    for name, default in COMMON_DEFAULTS.items():  # not set_defaults: the common actions are shared with every command
        if not hasattr(args, name):
            setattr(args, name, default)
    args.address_given = args.address
    args.origins = Origins()  # each command says where the parts of its request came from
    try:
        if args.command != "config":  # config set-context takes the flags as given, not a context's
            config.apply(args, given)
        args.address = args.address or DEFAULT_ADDRESS
        _check_flags(args)
        result: Result = args.func(args)
        return show(result, Printing(args.output, args.no_headers, args.sort_by))
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
