"""How the long-running processes end once they have stopped: without finalising the interpreter.
Threads that gRPC, kopf and idle keep-alive connections leave behind can still be in their C code
then, and abort the process (SIGABRT) or hang it after it said it stopped, though everything it
did was done."""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
