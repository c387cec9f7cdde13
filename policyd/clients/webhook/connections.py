"""The webhook's connections, bounded: each has a thread of its own (server.py), so a caller that
opens many, or trickles a request a byte at a time, would hold threads without end.

- A request is read by a deadline: from its first byte, its line, headers and body have
  REQUEST_READ_TIMEOUT seconds, however the bytes trickle in (a socket timeout alone counts
  from the last byte). Between requests a connection is idle, and waits as server.py says.
- At most MAX_CONNECTIONS are served at once. One more evicts a connection that is waiting (in
  its TLS handshake, or idle between requests): the API server reconnects as it does when an
  idle connection closes; with none waiting, the new one is closed."""

from __future__ import annotations

import io
import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

log = logging.getLogger("policyd.webhook")
MAX_CONNECTIONS = 128  # the API server keeps up to 25 idle per webhook host, and opens more for bursts
REQUEST_READ_TIMEOUT = 10.0  # the API server sends a review in one write: this is ample


class DeadlineReader(io.RawIOBase):
    """A connection's bytes, read within REQUEST_READ_TIMEOUT of the request's first byte (then
    TimeoutError, which the HTTP handler takes as a timed-out request and closes)."""

    def __init__(self, sock: socket.socket, idle_timeout: float) -> None:
        self.sock = sock
        self.idle_timeout = idle_timeout
        self.deadline: float | None = None  # None: between requests

    def readable(self) -> bool:
        return True

    def next_request(self) -> None:
        self.deadline = None

    def readinto(self, buffer: WriteableBuffer) -> int:
        if self.deadline is None:
            read = self.sock.recv_into(memoryview(buffer))
            self.deadline = time.monotonic() + REQUEST_READ_TIMEOUT
            return read
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the request was not read within {REQUEST_READ_TIMEOUT:g}s")
        self.sock.settimeout(left)
        try:
            return self.sock.recv_into(memoryview(buffer))
        finally:
            self.sock.settimeout(self.idle_timeout)  # writes and the wait for the next request


@dataclass
class _Served:
    sock: socket.socket  # the TLS socket once the handshake is done
    reader: DeadlineReader | None = None  # None: in its TLS handshake

    @property
    def waiting(self) -> bool:
        return self.reader is None or self.reader.deadline is None


class Connections:
    """The connections being served, and whether each waits (may be evicted) or reads or answers
    a request."""

    def __init__(self, limit: int = MAX_CONNECTIONS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._open: dict[object, _Served] = {}  # by the client's address: one per TCP connection
        self._full = False  # logged once each time the limit is reached

    def admit(self, client: object, accepted: socket.socket) -> bool:
        """Whether ``accepted``, from ``client``, is served; a waiting connection makes room for it."""
        with self._lock:
            if len(self._open) >= self.limit:
                if not self._full:
                    self._full = True
                    log.warning("%d connections open, the most served: evicting waiting ones", self.limit)
                waiting = next((key for key, served in self._open.items() if served.waiting), None)
                if waiting is None:
                    return False
                _wake(self._open.pop(waiting).sock)
            self._open[client] = _Served(accepted)
            return True

    def reading(self, client: object, reader: DeadlineReader) -> None:
        """Its handshake is done: requests are read through ``reader``."""
        with self._lock:
            if client in self._open:
                self._open[client] = _Served(reader.sock, reader)

    def closed(self, client: object) -> None:
        with self._lock:
            self._open.pop(client, None)
            if len(self._open) < self.limit:
                self._full = False


def _wake(sock: socket.socket) -> None:
    """End the connection: its thread's read returns (a close alone would not wake it)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # the client closed it already
        return
