"""The kubectl habits policyctl keeps: help with examples for every command, bare policyctl is its
help, "Did you mean this?", shell completion, -o custom-columns, --no-headers, --sort-by, named
contexts for the address and TLS files, and addresses refused by what is wrong with them."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from policyd.clients.policyctl.main import parser

from .conftest import Files
from .support import RUNTIME_70B, RUNTIME_NAME, no_traceback, policyctl, succeeded

VENV_BIN = str(Path(sys.executable).parent)  # where the policyctl console script is


def _commands() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """Every command and subcommand policyctl has: its words on the command line, and its parser."""
    found: list[tuple[list[str], argparse.ArgumentParser]] = []

    def walk(p: argparse.ArgumentParser, words: list[str]) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found.append(([*words, name], child))
                    walk(child, [*words, name])

    walk(parser(), [])
    return found


def test_every_command_has_a_description_examples_and_help_for_each_argument() -> None:
    commands = _commands()
    assert {"rules check", "rules fields", "config use-context", "status", "apply", "delete", "conformance"} <= {
        " ".join(words) for words, _ in commands
    }
    for words, p in commands:
        assert p.description, words
        undocumented = [a.dest for a in p._actions if not a.help and not isinstance(a, argparse._SubParsersAction)]
        assert undocumented == [], words
    for words in (["select"], ["rules", "check"], ["conformance"], ["config", "set-context"]):
        result = policyctl(*words, "--help")
        succeeded(result)
        assert f"\nExamples:\n  policyctl {' '.join(words)} " in result.stdout, result.stdout


def test_bare_policyctl_prints_its_help_and_succeeds() -> None:
    result = policyctl()
    succeeded(result)
    assert result.stdout.startswith("usage: policyctl") and "select" in result.stdout


def test_a_mistyped_command_is_answered_with_the_commands_it_may_mean() -> None:
    result = policyctl("selct", "-f", "x.yaml")
    no_traceback(result)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        'error: unknown command "selct" for "policyctl"',
        "",
        "Did you mean this?",
        "\tselect",
        "",
        "Run 'policyctl --help' for usage.",
    ]


def _bash_completions(line: str, tmp_path: Path) -> list[str]:
    script = tmp_path / "completion.bash"
    script.write_text(policyctl("completion", "bash").stdout)
    words = line.split(" ")
    program = (
        f"source {script}; COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
        f'COMP_LINE="{line}"; COMP_POINT={len(line)}; _python_argcomplete policyctl; printf "%s\\n" "${{COMPREPLY[@]}}"'
    )
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, env=env, timeout=60, check=True)
    return [w.strip() for w in done.stdout.splitlines() if w.strip()]


def test_bash_completes_commands_subcommands_and_choices_with_the_script_completion_prints(tmp_path: Path) -> None:
    assert _bash_completions("policyctl sel", tmp_path) == ["select"]
    assert _bash_completions("policyctl config use-", tmp_path) == ["use-context"]
    assert _bash_completions("policyctl explain --model-kind ", tmp_path) == ["ClusterBaseModel", "BaseModel"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_completion_prints_a_script_for_zsh_and_fish(shell: str) -> None:
    result = policyctl("completion", shell)
    succeeded(result)
    assert "policyctl" in result.stdout and "kubectl-policy" in result.stdout


def test_custom_columns_no_headers_and_sort_by_as_kubectl_takes_them(daemon: str, files: Files) -> None:
    columns = "-o=custom-columns=NAME:.name,SCORE:.score,KIND:.kind,MISSING:.nope"
    result = policyctl("explain", "-f", str(files.isvc), columns, "--sort-by", "{.score}", address=daemon)
    succeeded(result)
    assert [line.split() for line in result.stdout.splitlines()] == [
        ["NAME", "SCORE", "KIND", "MISSING"],
        [RUNTIME_70B, "0", "ClusterServingRuntime", "<none>"],
        [RUNTIME_NAME, "2", "ServingRuntime", "<none>"],
    ]
    bare = policyctl("explain", "-f", str(files.isvc), "--no-headers", "--sort-by", ".name", address=daemon)
    succeeded(bare)
    assert [line.split()[0] for line in bare.stdout.splitlines()] == sorted([RUNTIME_NAME, RUNTIME_70B])
    wrong = policyctl("explain", "-f", str(files.isvc), "-o", "custom-columns=NAME", address=daemon)
    assert (wrong.returncode, wrong.stderr.splitlines()[0]) == (
        2,
        "error: argument -o/--output: unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>",
    )


def test_a_context_gives_the_address_until_a_flag_or_the_environment_does(daemon: str, tmp_path: Path) -> None:
    env = {"POLICYCTL_CONFIG": str(tmp_path / "config")}
    succeeded(policyctl("config", "set-context", "here", "--address", daemon, env=env))
    succeeded(policyctl("config", "set-context", "nowhere", "--address", "127.0.0.1:1", env=env))
    assert policyctl("health", env=env).stderr.startswith("error: cannot reach policyd at 127.0.0.1:50051")
    assert policyctl("config", "use-context", "here", env=env).stdout == 'Switched to context "here".\n'
    assert policyctl("health", env=env).stdout == "SERVING\n"
    listed = policyctl("config", "get-contexts", "--no-headers", env=env).stdout.splitlines()
    assert [line.split() for line in listed] == [["*", "here", daemon, "<none>"], ["nowhere", "127.0.0.1:1", "<none>"]]
    unreachable = "error: cannot reach policyd at 127.0.0.1:1"
    assert policyctl("health", "--policyd-context", "nowhere", env=env).stderr.startswith(unreachable)
    assert policyctl("health", "--address", "127.0.0.1:1", env=env).stderr.startswith(unreachable)
    assert policyctl("health", env={**env, "POLICYD_ADDRESS": "127.0.0.1:1"}).stderr.startswith(unreachable)
    missing = policyctl("health", "--policyd-context", "gone", env=env)
    assert (
        missing.stderr
        == f'error: context "gone" is not in policyctl config {tmp_path / "config"} (policyctl config get-contexts)\n'
    )


@pytest.mark.parametrize(
    ("address", "what"),
    [
        ("127.0.0.1", "no port (give host:port)"),
        ("127.0.0.1:99999", "port '99999' is not a number from 1 to 65535"),
        ("http://127.0.0.1:50051", "give host:port, without a URL scheme"),
    ],
)
def test_an_address_that_cannot_be_one_says_what_is_wrong_with_it(address: str, what: str) -> None:
    result = policyctl("status", address=address)
    no_traceback(result)
    assert (result.returncode, result.stderr) == (1, f"error: address {address!r}: {what}\n")


def test_an_address_whose_host_does_not_resolve_says_so() -> None:
    result = policyctl("status", address="nohost.invalid:50051")
    no_traceback(result)
    assert result.stderr == (
        "error: cannot reach policyd at nohost.invalid:50051: its host name does not resolve (a typo, or no DNS here)\n"
    )
