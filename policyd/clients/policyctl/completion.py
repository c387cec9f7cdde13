"""policyctl completion SHELL: the script that makes bash, zsh or fish complete policyctl's (and
kubectl-policy's) commands, flags and choices. argcomplete writes it, and answers each Tab by
running policyctl's own parser (main calls argcomplete.autocomplete before parsing)."""

from __future__ import annotations

import argparse

from argcomplete.shell_integration import shellcode

from policyd.clients.policyctl.output import Result

SHELLS = ("bash", "zsh", "fish")


def script(args: argparse.Namespace) -> Result:
    text = shellcode(["policyctl", "kubectl-policy"], shell=args.shell)
    return Result({"shell": args.shell, "script": text}, text=text.rstrip(), default="text")
