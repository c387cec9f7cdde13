"""Serve from several processes (``policyd --processes N``), so decisions use every core.

A supervisor reserves the TCP port and starts N worker processes, each a whole daemon (rules,
catalog, caches) listening on the same port with SO_REUSEPORT: the kernel spreads connections
over them, by a hash of each connection's addresses — so the 4 connections of one client all
land on one of 2 workers 1 time in 8. Each worker also listens on a port of its own (reserved
too, so a restarted worker gets it back), and GetStatus lists them as ``endpoints``: a client
that balances its calls over those (gRPC round_robin; ``policyctl --address a,b``) uses every
worker whatever the hash. Each worker loads the same rules and catalog directories, so they
start at the same revisions (revisions are digests of content).

Catalog changes made over gRPC go through a journal that every worker shares: a worker that
takes ApplyObjects or DeleteObjects validates it, then, holding the journal's lock (flock),
replays what others wrote before, appends the accepted change, bumps the journal's sequence
number (8 bytes in a shared mmap) and applies it itself — all before it answers. Every worker
compares the sequence number with its own before each call and replays what it has not seen
first, so a call served by any process reflects every change acknowledged before it started.
A worker that dies is started again and replays the journal from the start. Rules and
catalog-directory changes are seen by each worker's own watcher (within the watch latency);
every answer names the revisions it was decided at.
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import mmap
import os
import pickle
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from policyd.catalog.snapshot import Catalog, CatalogObject, Key
from policyd.process.grpc_server import Listen, announce, stop_bound
from policyd.server.state import Change, ServingState

log = logging.getLogger("policyd.processes")
_SEQ = struct.Struct("<q")
_LENGTH = struct.Struct("<I")
# options a worker gets from the supervisor rather than from the command line
_OWN = (
    "--processes",
    "--listen",
    "--health-listen",
    "--ready-file",
    "--metrics-port",
    "--journal",
    "--pin-cpu",
    "--own-listen",
    "--endpoints",
)
AFFINITIES = ("auto", "on", "off")


def worker_cpus(affinity: str, processes: int, allowed: Iterable[int]) -> list[int] | None:
    """The CPU each worker is pinned to, of the ``allowed`` ones, or None to leave them to the
    kernel's scheduler. ``auto`` pins when each CPU has a worker of its own: a worker that stays
    on its CPU keeps its caches warm there, and two workers do not chase each other over the
    cores (on 2 cores, a third more Selects a second). With fewer workers, pinning would keep
    them off idle CPUs; with more, it would tie each connection to a CPU by the kernel's hash
    (SO_REUSEPORT), where unpinned the busy workers share the CPUs by load."""
    cpus = sorted(allowed)
    if affinity == "off" or not cpus or (affinity == "auto" and processes != len(cpus)):
        return None
    return [cpus[i % len(cpus)] for i in range(processes)]


def pin_to_cpu(cpu: int) -> None:
    """Run every thread of this process on ``cpu``, and the threads they start after."""
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), {cpu})
        except ProcessLookupError:  # a thread that ended meanwhile
            continue


class Journal:
    """An append-only file of accepted catalog changes, its sequence number in shared memory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._log = (root / "changes").open("ab+")
        seq = root / "seq"
        with seq.open("ab") as f:
            if f.tell() < _SEQ.size:
                f.write(b"\0" * _SEQ.size)
        self._seq_file = seq.open("r+b")
        self._seq = mmap.mmap(self._seq_file.fileno(), _SEQ.size)

    @staticmethod
    def create() -> Path:
        root = Path(tempfile.mkdtemp(prefix="policyd-journal-"))
        (root / "changes").touch()
        (root / "seq").write_bytes(b"\0" * _SEQ.size)
        return root

    def seq(self) -> int:
        value: int = _SEQ.unpack_from(self._seq)[0]
        return value

    @contextmanager
    def locked(self) -> Iterator[None]:
        fcntl.flock(self._log.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._log.fileno(), fcntl.LOCK_UN)

    def append(self, record: tuple[str, Any]) -> None:
        """Write a record and publish it (callers hold the lock)."""
        data = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
        self._log.seek(0, os.SEEK_END)
        self._log.write(_LENGTH.pack(len(data)) + data)
        self._log.flush()
        _SEQ.pack_into(self._seq, 0, self.seq() + 1)

    def read(self, offset: int, count: int) -> Iterator[tuple[int, tuple[str, Any]]]:
        """``count`` records from ``offset``, each with the offset after it."""
        with (self.root / "changes").open("rb") as f:
            f.seek(offset)
            for _ in range(count):
                (length,) = _LENGTH.unpack(f.read(_LENGTH.size))
                record = pickle.loads(f.read(length))
                offset += _LENGTH.size + length
                yield offset, record


class JournaledState(ServingState):
    """A worker's serving state: catalog changes go through the journal, and the catalog a
    call reads has every change published before the call."""

    def __init__(self, journal: Journal, *args: Any, **kwargs: Any) -> None:
        self._journal = journal
        self._seen, self._offset = 0, 0
        self._replaying = threading.RLock()
        self._busy = False
        super().__init__(*args, **kwargs)

    @property
    def catalog(self) -> Catalog:
        if self._journal.seq() != self._seen:
            self._catch_up()
        return self._catalog

    def _catch_up(self) -> None:
        with self._replaying:
            if self._busy:  # a replayed change being applied reads the catalog it changes
                return
            self._busy = True
            try:
                behind = self._journal.seq() - self._seen
                for offset, (what, value) in self._journal.read(self._offset, behind):
                    _CHANGES[what](self, value)
                    self._seen, self._offset = self._seen + 1, offset
            finally:
                self._busy = False

    def _publish_change(self, what: str, value: Any) -> tuple[Catalog, list[Change]]:
        with self._journal.locked():
            self._catch_up()
            with self._replaying:
                self._journal.append((what, value))
                self._busy = True
                try:
                    result = _CHANGES[what](self, value)
                finally:
                    self._busy = False
                self._seen += 1
                self._offset = (self._journal.root / "changes").stat().st_size
        return result

    def apply(self, objects: list[CatalogObject]) -> tuple[Catalog, list[Change]]:
        return self._publish_change("apply", objects)

    def delete(self, keys: list[Key]) -> tuple[Catalog, list[Change]]:
        return self._publish_change("delete", keys)

    def replace(self, objects: list[CatalogObject]) -> tuple[Catalog, list[Change]]:
        return self._publish_change("replace", objects)


# what a journal record does, as the plain state does it
_CHANGES: dict[str, Callable[[ServingState, Any], tuple[Catalog, list[Change]]]] = {
    "apply": ServingState.apply,
    "delete": ServingState.delete,
    "replace": ServingState.replace,
}


def _worker_argv(argv: Sequence[str]) -> list[str]:
    """The command line without the options the supervisor sets for each worker."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _OWN:
            skip = "=" not in arg
            continue
        out.append(arg)
    return out


def _reserve(listen: Listen) -> tuple[socket.socket, str]:
    """Hold the port (a bound socket that does not listen) so workers can share it."""
    host = listen.host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, listen.port))
    except OSError:
        sock.close()
        raise
    return sock, f"{listen.text.rsplit(':', 1)[0]}:{sock.getsockname()[1]}"


def supervise(argv: Sequence[str], args: argparse.Namespace) -> int:
    """Run ``args.processes`` workers on ``args.listen`` (and ``--health-listen``) until SIGTERM or SIGINT."""
    listens = [("--listen", args.listen)] + ([("--health-listen", args.health_listen)] if args.health_listen else [])
    held: list[socket.socket] = []
    addresses: list[str] = []
    for flag, listen in listens:
        if listen.unix:
            print(f"policyd: cannot start: --processes needs a TCP {flag} (SO_REUSEPORT)", file=sys.stderr)
            return 2
        try:
            sock, address = _reserve(listen)
        except OSError as err:
            print(f"policyd: cannot start: cannot listen on {listen.text}: {err.strerror or err}", file=sys.stderr)
            return 2
        held.append(sock)
        addresses += [flag, address]
    # each worker's own port, on the --listen host
    try:
        own = [_reserve(replace(args.listen, port=0)) for _ in range(args.processes)]
    except OSError as err:
        print(f"policyd: cannot start: cannot reserve a port for each process: {err.strerror or err}", file=sys.stderr)
        return 2
    held += [sock for sock, _ in own]
    endpoints = [address for _, address in own]
    root = Journal.create()
    base = [sys.executable, "-m", "policyd.daemon.main", *_worker_argv(argv), "--journal", str(root), *addresses]
    base += ["--endpoints", ",".join(endpoints)]

    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else ()  # Linux's
    cpus = worker_cpus(args.cpu_affinity, args.processes, allowed)

    def start(i: int) -> subprocess.Popen[bytes]:
        cmd = [*base, "--ready-file", str(root / f"ready-{i}"), "--own-listen", endpoints[i]]
        if args.metrics_port:
            cmd += ["--metrics-port", str(args.metrics_port + i)]
        if cpus is not None:
            cmd += ["--pin-cpu", str(cpus[i])]
        return subprocess.Popen(cmd)

    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    workers = [start(i) for i in range(args.processes)]
    try:
        while not all((root / f"ready-{i}").exists() for i in range(args.processes)):
            if stopping.wait(0.02) or any(w.poll() is not None for w in workers):
                print("policyd: cannot start: a worker process did not start", file=sys.stderr)
                return 2
        address = addresses[1]
        announce(address, args.ready_file)
        log.info(
            "serving",
            extra={"address": address, "processes": args.processes, "cpus": cpus or "any", "endpoints": endpoints},
        )
        while not stopping.wait(0.2):
            for i, worker in enumerate(workers):
                if worker.poll() is not None:
                    log.error("worker exited; starting it again", extra={"worker": i, "code": worker.returncode})
                    workers[i] = start(i)
        return 0
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        # a worker whose stop hangs ends itself at its bound, its stacks in the log: killed only past it
        deadline = time.monotonic() + stop_bound(args.shutdown_grace) + 1
        for worker in workers:
            try:
                worker.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.kill()
        for sock in held:
            sock.close()
        shutil.rmtree(root, ignore_errors=True)


PARENT_POLL = 1.0  # seconds between a worker's looks at whether its supervisor is still there


def stop_with_parent(stopping: threading.Event) -> None:
    """A worker stops as at SIGTERM once its supervisor is gone (killed, it cannot stop them):
    otherwise it would keep serving on the shared port, beside the workers of a supervisor
    started again."""
    parent = os.getppid()

    def watch() -> None:
        while not stopping.wait(PARENT_POLL):
            if os.getppid() != parent:
                log.warning("the supervisor is gone: stopping")
                stopping.set()

    threading.Thread(target=watch, name="supervisor-watch", daemon=True).start()


def serving_state(journal: Path | None, *args: Any, **kwargs: Any) -> ServingState:
    """A worker's journaled state under ``--processes``, the plain state otherwise (the
    arguments are ServingState's)."""
    if journal is None:
        return ServingState(*args, **kwargs)
    return JournaledState(Journal(journal), *args, **kwargs)
