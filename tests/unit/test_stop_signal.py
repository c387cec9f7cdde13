"""A stop signal is heeded whichever thread the kernel delivers it to: Python runs the handler in
the main thread only, so a main thread that waited without looking again would never see a
SIGTERM delivered to one of gRPC's threads (policyd/process/grpc_server.py until_stopped). A real
process, signalled on a thread other than its main one."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import signal, threading, time
    from policyd.process.grpc_server import stop_signal, until_stopped

    def signal_this_thread_later():
        time.sleep(0.5)  # the main thread is waiting by then
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    stopping = stop_signal()
    threading.Thread(target=signal_this_thread_later).start()
    until_stopped(stopping)
    print("stopped")
    """
)


def test_a_sigterm_delivered_to_another_thread_than_the_main_one_still_stops_the_process() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, "stopped\n", "")
