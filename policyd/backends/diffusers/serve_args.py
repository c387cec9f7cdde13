"""The arguments an engine's ``vllm serve`` command line gives vLLM-Omni.

The command line is the merged runner's ``command`` followed by its ``args``, with
Kubernetes' ``$(VAR)`` references filled in from literal env values. ``vllm serve`` is
found there directly, through ``python -m vllm.entrypoints.cli.main serve`` (or
vllm_omni's), inside a
``sh -c`` script, or — for a runner without a command, whose image supplies the entry
point — in ``args`` that pass ``--omni``.

Parsing is Python's own argparse, as vllm serve's is: ``--flag value`` and
``--flag=value``, boolean switches, aliases (``--usp`` for ``--ulysses-degree``,
``--ring`` for ``--ring-degree``), the last occurrence winning, and argparse's own error
messages for a value the engine would refuse (``argument --cfg-parallel-size: invalid int
value: 'two'``). As vLLM's parser does, ``--flag_name`` is read as ``--flag-name`` and a
JSON flag may be given key by key (``--diffusers-load-kwargs.variant fp16``). Flags this
parser does not declare are ignored (they are other engines' business), and prefixes
of flags are not expanded.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from policyd.semantics.runner_merge import Runner

_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh"})
_SHELL_OPERATORS = frozenset({"&&", "||", ";", "|", "&"})
_CLI_MODULES = ("vllm.entrypoints.cli.main", "vllm_omni.entrypoints.cli.main")


def _json_or_text(value: str) -> Any:
    """--quantization-config takes a JSON config or a bare method name."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def loads(value: str) -> Any:
    """json.loads under its own name, so argparse says ``invalid loads value`` as vllm serve does."""
    return json.loads(value)


# (flags, dest, type or action); every default is None so that "given" and "not given" differ.
_FLAGS: tuple[tuple[tuple[str, ...], str, Any], ...] = (
    (("--omni",), "omni", "store_true"),
    (("--diffusion-load-format",), "diffusion_load_format", ("default", "custom_pipeline", "dummy", "diffusers")),
    (("--model-class-name",), "model_class_name", str),
    (("--num-gpus",), "num_gpus", int),
    (("--diffusers-load-kwargs",), "diffusers_load_kwargs", loads),
    (("--diffusers-call-kwargs",), "diffusers_call_kwargs", loads),
    (("--usp", "--ulysses-degree"), "ulysses_degree", int),
    (("--ring", "--ring-degree"), "ring_degree", int),
    (("--allgather-degree",), "allgather_degree", int),
    (("--cfg-parallel-size",), "cfg_parallel_size", int),
    (("--tensor-parallel-size", "-tp"), "tensor_parallel_size", int),
    (("--use-hsdp",), "use_hsdp", "store_true"),
    (("--cache-backend",), "cache_backend", str),
    (("--step-execution",), "step_execution", "store_true"),
    (("--diffusion-streaming-output",), "diffusion_streaming_output", "store_true"),
    (("--enforce-eager",), "enforce_eager", "store_true"),
    (("--max-num-seqs",), "max_num_seqs", int),
    (("--enable-distributed-layerwise-offload",), "enable_distributed_layerwise_offload", "store_true"),
    (("--dlo-use-allgather",), "dlo_use_allgather", "store_true"),
    (("--dlo-no-use-allgather",), "dlo_use_allgather", "store_false"),
    (("--dtype",), "dtype", str),
    (("--quantization", "-q"), "quantization", str),
    (("--quantization-config",), "quantization_config", _json_or_text),
    (("--diffusion-quantization-config",), "diffusion_quantization_config", loads),
    (("--diffusion-attention-backend",), "diffusion_attention_backend", str),
    (("--diffusion-attention-config", "-dac"), "diffusion_attention_config", loads),
    (("--boundary-ratio",), "boundary_ratio", float),
    (("--flow-shift",), "flow_shift", float),
    (("--default-sampling-params",), "default_sampling_params", str),
)
# flags whose value is a JSON object, which vLLM also takes key by key
JSON_FLAGS = frozenset(names[0] for names, _, kind in _FLAGS if kind is loads or kind is _json_or_text)
_ALIASES = {name: names[0] for names, _, _ in _FLAGS for name in names}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse reports some errors here, not by raising
        raise argparse.ArgumentError(None, message)


def _parser() -> _Parser:
    parser = _Parser(prog="vllm serve", add_help=False, allow_abbrev=False, exit_on_error=False)
    for names, dest, kind in _FLAGS:
        if kind in ("store_true", "store_false"):
            parser.add_argument(*names, dest=dest, action=kind, default=None)
        elif isinstance(kind, tuple):
            parser.add_argument(*names, dest=dest, choices=kind, default=None)
        else:
            parser.add_argument(*names, dest=dest, type=kind, default=None)
    return parser


_PARSER = _parser()


@dataclass(frozen=True)
class ServeArgs:
    """What a ``vllm serve`` command line sets: each given flag's value by its dest."""

    omni: bool  # --omni is on the command line
    values: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""  # argparse's message when vllm serve would refuse the command line

    def get(self, dest: str, default: Any = None) -> Any:
        value = self.values.get(dest)
        return default if value is None else value

    def given(self, dest: str) -> bool:
        return self.values.get(dest) is not None


def _after_serve(tokens: Sequence[str]) -> list[str] | None:
    for i, token in enumerate(tokens):
        if PurePosixPath(token).name == "vllm" and i + 1 < len(tokens) and tokens[i + 1] == "serve":
            start = i + 2
        elif token == "-m" and tokens[i + 2 : i + 3] == ["serve"] and tokens[i + 1] in _CLI_MODULES:
            start = i + 3
        else:
            continue
        rest = list(tokens[start:])
        stop = next((k for k, t in enumerate(rest) if t in _SHELL_OPERATORS), len(rest))
        return rest[:stop]
    return None


def _script_tokens(argv: Sequence[str]) -> list[str] | None:
    if len(argv) >= 3 and PurePosixPath(argv[0]).name in _SHELLS and argv[1] == "-c":
        try:
            return shlex.split(argv[2])
        except ValueError:
            return None
    return None


def serve_tokens(runner: Runner) -> list[str] | None:
    """The tokens after ``vllm serve``, or None when the runner does not run it."""
    command = [runner.expand(t) for t in runner.command]
    args = [runner.expand(t) for t in runner.args]
    argv = command + args
    found = _after_serve(argv)
    if found is None and (script := _script_tokens(argv)) is not None:
        found = _after_serve(script)
    if found is None and not command:
        if args[:1] == ["serve"]:
            found = args[1:]
        elif "--omni" in args:
            found = args
    return found


def _set_path(target: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        nxt = target.get(key)
        if not isinstance(nxt, dict):
            nxt = target[key] = {}
        target = nxt
    target[path[-1]] = value


def normalise(tokens: Sequence[str]) -> list[str]:
    """vLLM's spellings to argparse's: ``--a_b`` → ``--a-b``; ``--json-flag.key value``
    gathered into the flag's JSON object (a whole-object value is taken first, keys go on top)."""
    out: list[str] = []
    dotted: dict[str, dict[str, Any]] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("--"):
            key, eq, value = token.partition("=")
            if "." in key:
                flag, _, path = key.partition(".")
                flag = _ALIASES.get(flag.replace("_", "-"), flag.replace("_", "-"))
                if flag in JSON_FLAGS and path:
                    if not eq and i + 1 < len(tokens):
                        value, i = tokens[i + 1], i + 1
                    _set_path(dotted.setdefault(flag, {}), path.split("."), _json_or_text(value))
                    i += 1
                    continue
            token = key.replace("_", "-") + eq + value
        out.append(token)
        i += 1
    for flag, keys in dotted.items():
        whole = _last_value(out, flag)
        base = whole if isinstance(whole, dict) else {}
        out.append(f"{flag}={json.dumps(_deep_merge(base, keys))}")
    return out


def _last_value(tokens: Sequence[str], flag: str) -> Any:
    names = {n for n, canonical in _ALIASES.items() if canonical == flag}
    found: Any = None
    for i, token in enumerate(tokens):
        key, eq, value = token.partition("=")
        if key in names:
            text = value if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            found = _json_or_text(text)
    return found


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _deep_merge(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def parse(tokens: Sequence[str]) -> ServeArgs:
    """The flags of a ``vllm serve`` command line (the tokens after ``serve``)."""
    normalised = normalise(tokens)
    omni = "--omni" in normalised
    try:
        namespace, _ = _PARSER.parse_known_args(normalised)
    except argparse.ArgumentError as err:
        return ServeArgs(omni=omni, error=str(err))
    values = {dest: value for dest, value in vars(namespace).items() if value is not None}
    return ServeArgs(omni=omni, values=values)


def serve_args(runner: Runner | None) -> ServeArgs | None:
    """The vllm serve arguments of an engine runner, or None when it does not run vllm serve."""
    if runner is None:
        return None
    tokens = serve_tokens(runner)
    return None if tokens is None else parse(tokens)
