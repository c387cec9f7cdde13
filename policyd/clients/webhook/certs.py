"""The serving certificate: ``tls.crt`` and ``tls.key`` in --cert-dir (cert-manager's Secret keys,
controller-runtime's file names), loaded again at the first TLS handshake after either file
changed. Reload-on-change per handshake rather than a watcher thread (watchfiles): two stat()
calls per new connection (rare: the API server keeps its connections open) and no window in
which a renewed certificate is on disk but not yet served. A Secret volume swaps its files
through a symlink; stat() follows it, so a swap is a change. A pair that does not load (a key
written before its certificate) keeps the last good one until the next change."""

from __future__ import annotations

import datetime
import logging
import os
import ssl
import threading
from pathlib import Path

from cryptography import x509

log = logging.getLogger("policyd.webhook.certs")
Stamp = tuple[tuple[int, int, int], ...]  # per file: (inode, size, mtime in ns)
Validity = tuple[datetime.datetime, datetime.datetime]  # not before, not after


class CertError(Exception):
    pass


class ServingCertificates:
    def __init__(self, directory: Path) -> None:
        self.cert, self.key = directory / "tls.crt", directory / "tls.key"
        self._lock = threading.Lock()
        self._stamp: Stamp | None = None
        self._context: ssl.SSLContext | None = None
        self._validity: Validity | None = None  # the served certificate's
        self._warned = False  # about the served certificate's validity: once per certificate

    def load(self) -> None:
        """The first load: CertError when the pair cannot be served (refused before starting)."""
        try:
            stamp = self._stamp_now()
            (self._context, self._validity), self._stamp = self._build(), stamp
        except (OSError, ssl.SSLError) as err:
            raise CertError(f"--cert-dir {self.cert.parent}: cannot load tls.crt and tls.key: {_why(err)}") from None
        self._check_validity()

    def context(self) -> ssl.SSLContext:
        """The context for a new connection: the files' current pair, else the last good one."""
        assert self._context is not None, "load() first"
        try:
            stamp = self._stamp_now()
        except OSError:
            return self._context  # mid-swap: the files come back with the next handshake
        if stamp != self._stamp:
            with self._lock:
                if stamp != self._stamp:
                    self._stamp = stamp  # tried once per change, logged once when it does not load
                    try:
                        self._context, self._validity = self._build()
                        self._warned = False
                        log.info("serving certificate reloaded", extra={"cert": str(self.cert)})
                    except (OSError, ssl.SSLError) as err:
                        log.warning(
                            "keeping the previous serving certificate: %s does not load: %s", self.cert, _why(err)
                        )
        self._check_validity()
        return self._context

    def _check_validity(self) -> None:
        """Log, once per certificate, that the one served is expired or not yet valid: the API
        server's handshake fails then, and says so only in its own log."""
        if self._warned or self._validity is None:
            return
        not_before, not_after = self._validity
        now = datetime.datetime.now(datetime.UTC)
        if not_before <= now <= not_after:
            return
        with self._lock:
            if self._warned:  # another connection's thread said it
                return
            self._warned = True
        if now > not_after:
            log.warning("serving certificate %s expired at %s", self.cert, not_after.isoformat())
        else:
            log.warning("serving certificate %s is not valid before %s", self.cert, not_before.isoformat())

    def _stamp_now(self) -> Stamp:
        return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in (os.stat(self.cert), os.stat(self.key)))

    def _build(self) -> tuple[ssl.SSLContext, Validity | None]:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert, self.key)
        try:
            served = x509.load_pem_x509_certificate(self.cert.read_bytes())  # the chain's first
        except ValueError:  # OpenSSL took it, cryptography's stricter parser not: served, unchecked
            return context, None
        return context, (served.not_valid_before_utc, served.not_valid_after_utc)


def _why(err: OSError | ssl.SSLError) -> str:
    if isinstance(err, ssl.SSLError):
        return err.reason or str(err)
    return f"{err.filename}: {err.strerror}" if err.filename else str(err)
