"""How the long-running processes end once they have stopped: without finalising the interpreter.
Threads that gRPC, kopf and idle keep-alive connections leave behind can still be in their C code
then, and abort the process (SIGABRT) or hang it after it said it stopped, though everything it
did was done."""

from __future__ import annotations

import atexit
import faulthandler
import logging
import os
import sys
from collections.abc import Callable
from typing import NoReturn

_cleanups: list[Callable[[], None]] = []


def at_exit(cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` when the process ends, also through exit_now, which skips atexit's handlers."""
    _cleanups.append(cleanup)
    atexit.register(cleanup)


EXIT_MARGIN = 5.0  # seconds past a stop's own bounds for what is left: closing channels, flushing logs


def exit_within(seconds: float) -> None:
    """Armed when a process starts to stop: if it is still running ``seconds`` later, every
    thread's stack goes to stderr and it exits 1. faulthandler's watchdog is a thread of C that
    needs no GIL, so it ends a process whatever its Python threads are stuck in; the stacks say
    where that was."""
    faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)


def exit_now(code: int) -> NoReturn:
    for cleanup in _cleanups:
        cleanup()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
