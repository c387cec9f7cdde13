"""A TCP relay in front of a server, for the tests of a server that vanishes and comes back: while
it holds, the connections it accepts are kept open and never answered (what a client meets when
a pod's IP is gone and its SYNs are dropped, or when a process is stopped); once it forwards,
each new connection is relayed to the target. Connections held stay held.

    with Relay(("127.0.0.1", port)) as relay:   # holding
        channel = grpc.insecure_channel(relay.address)
        relay.wait_held(1)                      # a connection attempt is hanging
        relay.forward()                         # the server is back"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class Relay:
    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._forwarding = False
        self._open: list[socket.socket] = []  # every socket it holds or relays, closed at the end
        self._held = 0
        self._changed = threading.Condition()
        threading.Thread(target=self._accept, name="relay", daemon=True).start()

    def forward(self) -> None:
        with self._changed:
            self._forwarding = True

    def wait_held(self, count: int, timeout: float = 30.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._held >= count, timeout):
                raise TimeoutError(f"no connection to hold within {timeout}s")

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed: the relay is done
                return
            with self._changed:
                self._open.append(conn)
                if not self._forwarding:
                    self._held += 1
                    self._changed.notify_all()
                    continue
                upstream = socket.create_connection(self.target)
                self._open.append(upstream)
            for source, sink in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        with self._changed:
            for sock in (self._listener, *self._open):
                _close(sock)


def _close(sock: socket.socket) -> None:
    """Closed, and whatever thread waits on it woken (close alone does not wake an accept or recv)."""
    with contextlib.suppress(OSError):  # never connected, or already shut
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:  # either side closed
        pass
