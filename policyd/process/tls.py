"""TLS for the gRPC servers (policyd and the renderer): ``--tls-cert`` and ``--tls-key``
serve TLS, ``--tls-client-ca`` requires client certificates that CA signed. The files are
read again when they change (gRPC asks before each new connection's handshake), and a
change takes effect only once the certificate and key load and match — a half-written or
mismatched pair keeps the previous one serving (logged)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

import grpc

log = logging.getLogger("policyd.process.tls")


class TlsError(ValueError):
    """Certificate files that cannot be served, in one line."""


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path
    client_ca: Path | None = None

    def stamp(self) -> tuple[tuple[int, int], ...]:
        out = []
        for path in (self.cert, self.key, self.client_ca):
            try:
                st = path.stat() if path is not None else None
            except OSError:
                st = None
            out.append((st.st_mtime_ns, st.st_size) if st is not None else (0, 0))
        return tuple(out)


@dataclass(frozen=True)
class _Loaded:
    cert: bytes
    key: bytes
    client_ca: bytes | None


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise TlsError(f"cannot read the {what} {path}: {err.strerror or err}") from None


def load(files: TlsFiles) -> _Loaded:
    """The files' bytes, once the certificate and key match and the CA is a certificate."""
    loaded = _Loaded(
        _read(files.cert, "certificate"),
        _read(files.key, "key"),
        _read(files.client_ca, "client CA") if files.client_ca is not None else None,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(files.cert, files.key)
    except (ssl.SSLError, OSError) as err:
        raise TlsError(f"the certificate {files.cert} and key {files.key} do not load as a pair: {err}") from None
    if loaded.client_ca is not None:
        try:
            context.load_verify_locations(cadata=loaded.client_ca.decode())
        except (ssl.SSLError, ValueError, UnicodeDecodeError) as err:
            raise TlsError(f"the client CA {files.client_ca} is not a PEM certificate: {err}") from None
    return loaded


def _configuration(loaded: _Loaded) -> grpc.ServerCertificateConfiguration:
    return grpc.ssl_server_certificate_configuration([(loaded.key, loaded.cert)], root_certificates=loaded.client_ca)


class ServerTls:
    """Server credentials that follow the files."""

    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self._stamp = files.stamp()
        self._initial = load(files)
        self._lock = threading.Lock()

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        stamp = self.files.stamp()
        if stamp == self._stamp:
            return None
        with self._lock:
            if stamp == self._stamp:
                return None
            try:
                loaded = load(self.files)
            except TlsError as err:
                log.error("certificate change refused; the previous one keeps serving", extra={"error": str(err)})
                return None
            self._stamp = stamp
            log.info("certificate read again", extra={"file": str(self.files.cert)})
            return _configuration(loaded)

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.dynamic_ssl_server_credentials(
            _configuration(self._initial),
            self._fetch,
            require_client_authentication=self.files.client_ca is not None,
        )


def files_of(cert: Path | None, key: Path | None, client_ca: Path | None) -> TlsFiles | None:
    """The flags' TLS files, or None for plaintext; TlsError when they do not go together."""
    if cert is None and key is None:
        if client_ca is not None:
            raise TlsError("--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked over TLS")
        return None
    if cert is None or key is None:
        raise TlsError("--tls-cert and --tls-key go together")
    return TlsFiles(cert, key, client_ca)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is this machine's loopback."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)
