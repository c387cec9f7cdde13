"""The life of a gRPC server process (policyd and the renderer sidecar): health,
binding to host:port or a unix socket, announcing readiness, stopping on a signal."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import socket
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from policyd.process.exiting import EXIT_MARGIN, exit_within
from policyd.process.health import HealthServicer
from policyd.process.tls import is_loopback

DEFAULT_GRACE = 20.0  # seconds for calls in progress at SIGTERM (Kubernetes waits 30 before SIGKILL)
STOP_MARGIN = 2.0  # seconds past the grace that gRPC's stop is waited for
log = logging.getLogger("policyd.process")
IDLE_CONNECTION_SECONDS = 300  # a connection without calls for this long is closed (clients reconnect)
MAX_CONNECTION_AGE_SECONDS = 300
MAX_CONNECTION_AGE_GRACE_SECONDS = 60


class ListenError(ValueError):
    """An address that cannot be listened on, in one line for the operator."""


@dataclass(frozen=True)
class Listen:
    """A ``host:port`` or ``unix:PATH`` listen address, checked."""

    text: str
    host: str = ""  # as written, brackets removed ("::" for "[::]:50051"); empty for a unix socket
    port: int = 0
    path: str = ""  # the unix socket's path

    @property
    def unix(self) -> bool:
        return bool(self.path)


def parse_listen(text: str) -> Listen:
    if text.startswith("unix:"):
        path = text.removeprefix("unix:").removeprefix("//")
        if not path:
            raise ListenError(f"{text!r}: unix: needs a socket path")
        return Listen(text, path=path)
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ListenError(f"{text!r}: expected host:port or unix:PATH")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ListenError(f"{text!r}: port must be a number from 0 to 65535")
    return Listen(text, host=host.removeprefix("[").removesuffix("]"), port=int(port_text))


def seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None


def add_security_flags(p: argparse.ArgumentParser) -> None:
    """TLS and plaintext exposure, as policyd and the renderer share them."""
    p.add_argument("--tls-cert", type=Path, help="serve TLS with this PEM certificate (chain), read again on change")
    p.add_argument("--tls-key", type=Path, help="the certificate's PEM private key")
    p.add_argument("--tls-client-ca", type=Path, help="require client certificates signed by this PEM CA (mTLS)")
    p.add_argument(
        "--insecure",
        action="store_true",
        help="serve plaintext on an address beyond loopback (without TLS, only loopback and unix sockets are served)",
    )
    p.add_argument(
        "--shutdown-grace",
        type=seconds,
        default=DEFAULT_GRACE,
        help="seconds calls in progress get to finish after SIGTERM (%(default)s)",
    )


def new_server(
    workers: int,
    max_message_bytes: int = 16 << 20,
    max_concurrent: int | None = None,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    shared: bool = False,
) -> grpc.Server:
    """A server with its limits: a larger request is RESOURCE_EXHAUSTED (gRPC's check), and so is a
    call beyond ``max_concurrent`` in progress or queued. ``shared``: one of the processes
    ``policyd --processes`` starts on one port (SO_REUSEPORT)."""
    options = [
        # gRPC sets SO_REUSEPORT by default, so a second process on a busy port would bind it too
        # and the two would share the traffic; an operator expects "address already in use".
        ("grpc.so_reuseport", 1 if shared else 0),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_connection_idle_ms", IDLE_CONNECTION_SECONDS * 1000),
        # a busy client's connection ends now and then (its calls finish first), so a client that
        # balances over a DNS name resolves it again and finds replicas added since
        ("grpc.max_connection_age_ms", MAX_CONNECTION_AGE_SECONDS * 1000),
        ("grpc.max_connection_age_grace_ms", MAX_CONNECTION_AGE_GRACE_SECONDS * 1000),
    ]
    return grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers),
        options=options,
        interceptors=list(interceptors),
        maximum_concurrent_rpcs=max_concurrent,
    )


def check_exposure(listen: Listen, tls: bool, insecure: bool) -> None:
    """Plaintext only where nobody else can listen in: loopback or a unix socket, unless ``--insecure``."""
    if tls or insecure or listen.unix or is_loopback(listen.host):
        return
    raise ListenError(
        f"{listen.text}: plaintext beyond this machine; serve TLS (--tls-cert and --tls-key), listen on "
        "loopback or a unix socket, or pass --insecure to serve plaintext anyway"
    )


def _check_tcp_free(listen: Listen) -> None:
    try:
        infos = socket.getaddrinfo(listen.host, listen.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise ListenError(f"{listen.text}: cannot resolve {listen.host!r}: {err.strerror}") from None
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does: TIME_WAIT is no owner
            try:
                probe.bind(address)
            except OSError as err:
                raise ListenError(f"{listen.text}: {err.strerror.lower() if err.strerror else err}") from None


def _check_unix_free(listen: Listen) -> None:
    """gRPC unlinks an existing socket file before binding: refuse when a live server owns it."""
    path = Path(listen.path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ListenError(f"{listen.text}: {path} exists and is not a socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError as err:
            if err.errno in (errno.ECONNREFUSED, errno.ENOENT):
                return  # left behind by a process that is gone: safe to replace
            raise ListenError(f"{listen.text}: {err.strerror}") from None
    raise ListenError(f"{listen.text}: address already in use")


def bind(
    server: grpc.Server, listen: Listen, credentials: grpc.ServerCredentials | None = None, shared: bool = False
) -> str:
    """Bind (with TLS given ``credentials``) and give the address actually bound (the real port for ``:0``);
    ``shared``: the port is held for this process by ``policyd --processes``."""
    if listen.unix:
        _check_unix_free(listen)
    elif not shared:
        _check_tcp_free(listen)
    try:
        if credentials is None:
            port = server.add_insecure_port(listen.text)
        else:
            port = server.add_secure_port(listen.text, credentials)
    except RuntimeError:
        port = 0
    if listen.unix:
        return listen.text
    if not port:
        raise ListenError(f"{listen.text}: cannot listen")
    return f"{listen.text.rsplit(':', 1)[0]}:{port}"


def add_health(server: grpc.Server, services: Iterable[str], serving: bool = True) -> health.HealthServicer:
    """Standard gRPC health checking for the server ("") and each service: SERVING, or NOT_SERVING
    until ``set_serving`` (a daemon that must fill its catalog first)."""
    servicer = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
    for name in ("", *services):
        servicer.set(name, status)
    return servicer


def set_serving(servicers: Iterable[health.HealthServicer], services: Iterable[str]) -> None:
    """SERVING for the server and each service (a servicer shutting down stays NOT_SERVING)."""
    for servicer in servicers:
        for name in ("", *services):
            servicer.set(name, health_pb2.HealthCheckResponse.SERVING)


def announce(address: str, ready_file: Path | None) -> None:
    """Write the address for whoever waits on us (tests, the CLI, process supervisors)."""
    if ready_file is not None:
        # written aside, then renamed: a waiter that sees the file sees the whole address
        partial = ready_file.with_name(ready_file.name + ".partial")
        partial.write_text(address)
        os.replace(partial, ready_file)


def stop_signal() -> threading.Event:
    """Set at SIGTERM or SIGINT (see ``until_stopped``). Taken before readiness is announced, so
    that a stop sent as soon as the ready file appears is not lost."""
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    return stopping


SIGNAL_POLL = 0.25  # seconds between the main thread's looks for a signal it has not yet handled


def until_stopped(stopping: threading.Event) -> None:
    """Wait for ``stop_signal``'s event. Python runs a signal's handler in the main thread only,
    once that thread runs Python again: a signal the kernel delivers to another thread (gRPC's,
    the HTTP server's) does not wake a main thread blocked in a wait without a timeout, so
    its SIGTERM would go unheeded until another signal reached the main thread."""
    while not stopping.wait(SIGNAL_POLL):
        pass


def stop_bound(grace: float) -> float:
    """Seconds after SIGTERM by which a server given ``grace`` has exited, one way or the other."""
    return grace + STOP_MARGIN + EXIT_MARGIN


def wait_for_stop_signal(
    stopping: threading.Event,
    server: grpc.Server,
    health_servicer: health.HealthServicer,
    grace: float = DEFAULT_GRACE,
    drain: Callable[[float], float] | None = None,
) -> None:
    """Serve until ``stopping`` is set, then report NOT_SERVING so clients drain, refuse new calls,
    and stop once the calls already accepted finish (up to ``grace`` seconds in all; ``drain``
    refuses and waits first, giving back the grace left). A process still here when every step's
    bound has passed shows its threads' stacks and exits 1 (``exit_within``)."""
    until_stopped(stopping)
    exit_within(stop_bound(grace))
    health_servicer.enter_graceful_shutdown()
    if drain is not None:
        grace = drain(grace)
    # gRPC cancels what is left at the grace's end; its stopped event is waited for a little
    # longer, no more: once (a warm full suite, a TLS certificate just replaced) it never came
    # and the daemon outlived its SIGTERM. The caller exits either way.
    if not server.stop(grace=grace).wait(grace + STOP_MARGIN):
        log.warning("gRPC did not report stopping within %.3gs of the grace's end: exiting", STOP_MARGIN)
