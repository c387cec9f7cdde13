"""The HTTPS server: OME's four webhook paths, /healthz and /readyz.

The standard library's ThreadingHTTPServer over ``ssl``, a thread per connection: the calls a
review makes (the gRPC stub on the shared channel of policyd/clients/channels.py, the kubernetes client)
block, so a thread is what each needs, and the API server keeps a few connections open (HTTP/1.1
keep-alive) rather than opening one per review, so the threads are few and long-lived. That
serves a four-path JSON endpoint without a second gRPC stack (grpc.aio) beside the one the other
clients share. The TLS handshake runs in the connection's thread, so a slow client holds up only
itself, and takes the serving certificate as it is on disk then (certs.py)."""

from __future__ import annotations

import contextlib
import io
import logging
import ssl
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from policyd.clients.webhook import review
from policyd.clients.webhook.admission import Reviewer
from policyd.clients.webhook.certs import ServingCertificates
from policyd.clients.webhook.connections import Connections, DeadlineReader

log = logging.getLogger("policyd.webhook")
# path -> (the kind it reviews, whether it defaults rather than validates): OME's paths
ENDPOINTS = {
    "/validate-ome-io-v1beta1-inferenceservice": ("InferenceService", False),
    "/validate-ome-io-v1beta1-servingruntime": ("ServingRuntime", False),
    "/validate-ome-io-v1beta1-clusterservingruntime": ("ClusterServingRuntime", False),
    "/mutate-ome-io-v1beta1-inferenceservice": ("InferenceService", True),
}
HEALTH = ("/healthz", "/readyz")
MAX_BODY = 16 * 1024 * 1024  # an object and its old version, each at most etcd's 1.5 MiB, with room
HANDSHAKE_TIMEOUT = 10.0
# longer than the API server's idle timeout for its webhook connections (Go's 90s): it closes
# them first, never sending a review on a connection this side is closing
IDLE_TIMEOUT = 120.0
DEFAULT_REVIEW_TIMEOUT = 10.0  # the API server's default timeoutSeconds, when the URL does not say
READY_TIMEOUT = 2.0
MAX_HEADER_LINE, MAX_HEADERS = 65536, 100  # http.client's limits


def review_deadline(query: str, now: float) -> float:
    """When a review must be answered by: before the timeout the API server puts in the URL
    (``?timeout=10s``, the configuration's timeoutSeconds), with a margin for the answer to get
    back, so that kubectl hears policyd's denial rather than the API server's timeout."""
    budget = DEFAULT_REVIEW_TIMEOUT
    given = parse_qs(query).get("timeout", [""])[0].removesuffix("s")
    with contextlib.suppress(ValueError):  # not a duration: the default
        budget = float(given) if given else budget
    return now + max(budget - 1.0, budget / 2)


class InFlight:
    """The reviews being answered, so that a stopping server finishes them first."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    def __enter__(self) -> None:
        with self._idle:
            self._count += 1

    def __exit__(self, *_: object) -> None:
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    def wait(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout)


class WebhookServer(ThreadingHTTPServer):
    daemon_threads = True  # idle keep-alive connections do not hold up the exit; InFlight does that
    # connections not yet accepted: with socketserver's 5, a burst's SYNs are dropped (1 s each)
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        certs: ServingCertificates,
        reviewer: Reviewer,
        health: health_pb2_grpc.HealthStub,
    ) -> None:
        self.certs, self.reviewer, self.health = certs, reviewer, health
        self.in_flight = InFlight()
        self.connections = Connections()
        super().__init__(address, Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection, unless there are as many as it serves (connections.py)."""
        if self.connections.admit(client_address, request):
            super().process_request(request, client_address)
        else:
            self.shutdown_request(request)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """In the connection's thread: the TLS handshake, then the requests it carries."""
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            conn = self.certs.context().wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as err:
            log.debug("TLS handshake with %s failed: %s", client_address[0], err)
            self.connections.closed(client_address)
            return
        try:
            Handler(conn, client_address, self)
        finally:
            self.connections.closed(client_address)
            conn.close()  # wrap_socket took over the socket: the server's close of it is a no-op


class Headers(dict[str, str]):
    """A request's headers by their lower-case names: what the handler asks of them."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every response says its Content-Length
    server: WebhookServer
    raw_requestline: bytes  # the base class's: the request line, as handle_one_request read it
    timeout = IDLE_TIMEOUT
    disable_nagle_algorithm = True  # a response is one small write: no waiting for the last ACK
    wbufsize = 64 * 1024  # headers and body leave in one write (flushed after each request)
    # what the base class answers itself (a malformed request line or header): one line, not HTML
    error_message_format = "%(message)s\n"
    error_content_type = "text/plain; charset=utf-8"
    reader: DeadlineReader

    def setup(self) -> None:
        super().setup()
        self.reader = DeadlineReader(self.connection, IDLE_TIMEOUT)
        self.rfile = io.BufferedReader(self.reader)
        self.server.connections.reading(self.client_address, self.reader)

    def handle_one_request(self) -> None:
        self.reader.next_request()  # the next request's deadline starts with its first byte
        super().handle_one_request()

    def parse_request(self) -> bool:
        """An HTTP/1.1 request's line and headers, read without the email package the base class
        parses headers with (a fifth of the webhook's time per review); anything else is the base
        class's to parse and answer."""
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if len(words) != 3 or words[2] != "HTTP/1.1":
            return super().parse_request()
        self.command, self.path, self.request_version = words
        headers = Headers()
        for _ in range(MAX_HEADERS + 1):
            line = self.rfile.readline(MAX_HEADER_LINE + 1)
            if len(line) > MAX_HEADER_LINE:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            text = str(line, "iso-8859-1")
            name, colon, value = text.partition(":")
            if not colon or not name or name != name.strip():
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad header line ({text.strip()[:80]!r})")
                return False
            headers[name.lower()] = value.strip()
        else:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
            return False
        if self.path.startswith("//"):  # as the base class: never an absolute URI without a scheme
            self.path = "/" + self.path.lstrip("/")
        self.headers = headers  # type: ignore[assignment]  # what the handler reads of email's Message
        self.close_connection = headers.get("Connection", "").lower() == "close"
        if headers.get("Expect", "").lower() == "100-continue":
            return self.handle_expect_100()
        return True

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        body = self._body()
        if body is None:
            return
        if url.path not in ENDPOINTS:
            self._plain(HTTPStatus.BAD_REQUEST if url.path in HEALTH else HTTPStatus.NOT_FOUND, self._unknown(url.path))
            return
        start = time.monotonic()
        kind, defaults = ENDPOINTS[url.path]
        try:
            request = review.parse(body, kind)
        except review.BadReview as err:
            log.info("bad AdmissionReview on %s: %s", url.path, err)
            self._plain(HTTPStatus.BAD_REQUEST, str(err))
            return
        with self.server.in_flight:
            deadline = review_deadline(url.query, start)
            reviewer = self.server.reviewer
            answer = reviewer.default(request, deadline) if defaults else reviewer.validate(request, deadline)
            self._send(HTTPStatus.OK, "application/json", review.encode(request.uid, answer))
        fields = {
            "uid": request.uid,
            "operation": request.operation,
            "object": request.describe(),
            "allowed": answer.allowed,
            "ms": round((time.monotonic() - start) * 1000, 2),
        }
        if answer.allowed:
            log.debug("admitted %s", request.describe(), extra=fields)
        else:
            log.info("denied %s: %s", request.describe(), answer.message, extra=fields)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/healthz":
            self._plain(HTTPStatus.OK, "ok")
        elif path == "/readyz":
            self._ready()
        else:
            self._plain(HTTPStatus.BAD_REQUEST if path in ENDPOINTS else HTTPStatus.NOT_FOUND, self._unknown(path))

    def _wrong_method(self) -> None:
        if "Content-Length" in self.headers and self._body() is None:
            return
        self._plain(HTTPStatus.BAD_REQUEST, self._unknown(urlsplit(self.path).path))

    do_PUT = do_PATCH = do_DELETE = _wrong_method

    def _unknown(self, path: str) -> str:
        if path in ENDPOINTS:
            return f"{self.command} {path}: POST an {review.API_VERSION} {review.KIND} here"
        if path in HEALTH:
            return f"{self.command} {path}: GET it"
        return f"no webhook at {path}: the webhook's paths are {', '.join(ENDPOINTS)}"

    def _ready(self) -> None:
        reviewer = self.server.reviewer
        try:
            reply = self.server.health.Check(health_pb2.HealthCheckRequest(), timeout=READY_TIMEOUT)
        except grpc.RpcError as err:
            self._plain(
                HTTPStatus.SERVICE_UNAVAILABLE, f"policyd at {reviewer.address} does not answer: {err.code().name}"
            )
            return
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            self._plain(HTTPStatus.SERVICE_UNAVAILABLE, f"policyd at {reviewer.address} is not serving")
            return
        self._plain(HTTPStatus.OK, "ok")

    def _body(self) -> bytes | None:
        """The request's body; None when it was refused (the connection then closes: what is left
        of an unread body cannot be told from the next request)."""
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            self._plain(HTTPStatus.BAD_REQUEST, "send the AdmissionReview with a Content-Length")
            return None
        if not (length.isascii() and length.isdigit()):  # str.isdigit() also takes '²'
            self.close_connection = True
            self._plain(HTTPStatus.BAD_REQUEST, f"Content-Length {length!r} is not a number of bytes")
            return None
        if int(length) > MAX_BODY:
            self.close_connection = True
            self._plain(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {MAX_BODY} bytes")
            return None
        body = self.rfile.read(int(length))
        if len(body) < int(length):
            self.close_connection = True  # the client went away mid-body
            return None
        return body

    def _plain(self, status: HTTPStatus, message: str) -> None:
        self._send(status, "text/plain; charset=utf-8", f"{message}\n".encode())

    def _send(self, status: HTTPStatus, content_type: str, body: bytes) -> None:
        """The status line, headers and body in one write. Not send_response's: its Server and
        Date headers (the date formatted by the email package) are nothing the API server reads,
        and do_POST logs each review itself."""
        close = "Connection: close\r\n" if self.close_connection else ""
        head = (
            f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n{close}\r\n"
        )
        self.wfile.write(head.encode("latin-1") + body)

    def log_message(self, format: str, *args: Any) -> None:  # the base class's names
        log.debug("%s: " + format, self.address_string(), *args)
