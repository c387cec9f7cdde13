"""Answers as the wire carries them: encoded once and kept, so a large answer is bytes put
together, not messages built. A runtime's identity (name, kind, namespace) is encoded once per
runtime and a scope's once per scope; a verdict's other fields once per verdict and view (a
verdict stands for every runtime of its shape), a RankedRuntime's once per verdict and shape;
an answer's rows are cut where the response budget ends. The encodings live here alone, kept
weakly by the verdicts and tables of kept verdicts they encode, which go when a request key is
pushed out or the revision retires; the messages themselves come from server/responses.py."""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Generic, Protocol, TypeVar

from google.protobuf.message import Message

from policyd.contract import policy_pb2 as pb
from policyd.decision.verdicts import RuntimeVerdict, Verdict
from policyd.edge import limits
from policyd.edge.gate import Preencoded
from policyd.memo import Bounded, Lru, keeping
from policyd.resources.objects import ServingRuntime
from policyd.server.responses import ranked_tail, said

M = TypeVar("M", bound=Message)
T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class KeptTable(Protocol):
    """Which kept verdicts an answer's rows are: the table they were kept in (any object that
    lives as long as they do) and each row's runtime key in it (decision/verdict_cache.py)."""

    @property
    def kept(self) -> object: ...

    @property
    def keys(self) -> Sequence[int]: ...


@dataclass(frozen=True)
class Encoded(Preencoded, Generic[M]):
    """A response as the wire carries it: the Gate sends the bytes as they are, so a large
    answer (and a cached one) is not decoded into a message only to be encoded again."""

    kind: type[M]
    data: bytes

    def message(self) -> M:
        return self.kind.FromString(self.data)


def encode(message: M) -> Encoded[M]:
    return Encoded(type(message), message.SerializeToString())


class _Wires:
    """What a kept verdict encodes to (it stands for every runtime of its shape, and answers
    about them read it again): its fields after the runtime's identity by view (full or not),
    and a RankedRuntime's by the shape of runtime it ranks (whose entries differ)."""

    __slots__ = ("ranked", "tails")

    def __init__(self) -> None:
        self.tails: dict[bool, bytes] = {}
        self.ranked: dict[str, bytes] = {}


# Encodings kept by the verdicts they encode, and by the tables of kept verdicts (by runtime
# key): they go when what they encode goes. Verdicts stay plain values (decision/verdicts.py).
_BY_VERDICT: weakref.WeakKeyDictionary[Verdict, _Wires] = weakref.WeakKeyDictionary()
_BY_KEPT: weakref.WeakKeyDictionary[object, dict[int, bytes]] = weakref.WeakKeyDictionary()
_KEEPING = threading.Lock()


def _kept_by(table: weakref.WeakKeyDictionary[K, V], owner: K, new: Callable[[], V]) -> V:
    """What ``table`` keeps for ``owner``, made on first use."""
    found = table.get(owner)
    if found is None:
        with _KEEPING:
            found = table.setdefault(owner, new())
    return found


@dataclass(frozen=True)
class Rows:
    """An answer's verdicts in the basic view, or the ``full`` one (with each group's reasons),
    each to be encoded after its runtime's identity (from ``scope_identities`` or
    ``identities``); ``kept`` says which kept verdicts they are, when they are. ``by_verdict``
    keeps each one's encoding by the verdict (a verdict may stand for many of them)."""

    identities: Sequence[bytes]
    verdicts: Sequence[Verdict]
    kept: KeptTable | None = None
    full: bool = False
    by_verdict: bool = False

    def tails(self, start: int, stop: int) -> Sequence[bytes]:
        """The encoded fields after the identity of the verdicts of rows ``start`` to ``stop``."""
        verdicts = _part(self.verdicts, start, stop)
        if self.kept is None and not self.by_verdict:
            return [_tail(v, self.full) for v in verdicts]
        if self.kept is None or self.full:  # (the table holds the basic view)
            return [_kept_tail(v, self.full) for v in verdicts]
        wires, keys = _kept_by(_BY_KEPT, self.kept.kept, dict), _part(self.kept.keys, start, stop)
        try:  # an answer given before: every one is in the table (and no verdict is read)
            return list(map(wires.__getitem__, keys))
        except KeyError:
            pass
        found = []
        for key, v in zip(keys, verdicts, strict=True):
            wire = wires.get(key)
            if wire is None:
                wire = wires[key] = _kept_tail(v, False)
            found.append(wire)
        return found


def _part(items: Sequence[T], start: int, stop: int) -> Sequence[T]:
    return items if start == 0 and stop >= len(items) else items[start:stop]


ROWS_AT_ONCE = 1024  # rows encoded between looks at the budget: a large scope's answer stops at it


def with_rows(head: M, items: str, rows: Rows, omitted: str, more: bytes = b"") -> Encoded[M]:
    """``head`` (a response without its repeated verdicts), ``more`` of its fields already
    encoded, and the ``rows`` in its field ``items``, the last of them left out and counted in
    ``omitted`` as far as it takes to keep the answer within RESPONSE_BUDGET bytes. Fields in
    any order are one message to a reader."""
    number = head.DESCRIPTOR.fields_by_name[items].number
    tag = _varint(number << 3 | 2)  # length-delimited
    room = limits.RESPONSE_BUDGET - head.ByteSize() - len(more) - 16  # the count, when set
    parts: list[bytes] = []
    count = len(rows.identities)
    for start in range(0, count, ROWS_AT_ONCE):
        stop = start + ROWS_AT_ONCE
        some = _rows(tag, _part(rows.identities, start, stop), rows.tails(start, stop))
        size = sum(map(len, some))
        if size > room:
            kept = _fitting(some, room)
            parts += some[: 3 * kept]
            setattr(head, omitted, count - start - kept)
            break
        room -= size
        parts += some
    return Encoded(type(head), b"".join([head.SerializeToString(), more, *parts]))  # one copy of a large answer


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_HEADS_UP_TO = 1 << 12  # rows up to 4 kB have their tag and length prefix made once
_HEADS: dict[bytes, list[bytes]] = {}  # by tag


def _heads(tag: bytes) -> list[bytes]:
    """Field ``tag``'s tag and length prefix, by the field's length up to _HEADS_UP_TO."""
    found = _HEADS.get(tag)
    if found is None:
        found = _HEADS[tag] = [tag + _varint(n) for n in range(_HEADS_UP_TO)]
    return found


def _head(tag: bytes, n: int) -> bytes:
    """Field ``tag``'s tag and the length prefix of ``n`` bytes."""
    heads = _heads(tag)
    return heads[n] if n < len(heads) else tag + _varint(n)


_IDENTITY: Bounded[str, bytes] = Bounded(
    200_000
)  # by the runtime's digest (its name, kind and namespace among its content)


def _identity(runtime: ServingRuntime) -> bytes:
    """The runtime's identity as a RuntimeVerdict's fields 1-3 encode it."""
    found = _IDENTITY.get(runtime.digest)
    if found is None:
        identity = pb.RuntimeVerdict(name=runtime.meta.name, kind=runtime.kind, namespace=runtime.meta.namespace)
        found = _IDENTITY.put(runtime.digest, identity.SerializeToString())
    return found


def identities(runtimes: Iterable[ServingRuntime]) -> list[bytes]:
    return [_identity(r) for r in runtimes]


_SCOPES_KEPT = 16
# the identities of the last scopes answered about, with the scope (a catalog's scopes are the
# same objects while it stands, and a tuple's runtimes stay its own)
_SCOPES: Lru[int, tuple[Sequence[ServingRuntime], list[bytes]]] = Lru(_SCOPES_KEPT)


def scope_identities(scope: Sequence[ServingRuntime]) -> Sequence[bytes]:
    """``identities`` of a scope, made once per scope: an answer about a whole scope then
    reads one list, not each runtime and a table (cold, that was a third of its encoding)."""
    seen = _SCOPES.get(id(scope))
    if seen is not None and seen[0] is scope:
        return seen[1]
    found = identities(scope)
    if keeping():  # a request catalog's scope is its own: kept, it would pin the call's runtimes
        _SCOPES.put(id(scope), (scope, found))
    return found


def _tail(v: Verdict, full: bool) -> bytes:
    """A RuntimeVerdict's fields after the runtime's identity, in the basic view or the ``full`` one."""
    return said(v, full).SerializeToString()


def _kept_tail(v: Verdict, full: bool) -> bytes:
    """``_tail`` of a kept verdict, encoded once in each view."""
    tails = _kept_by(_BY_VERDICT, v, _Wires).tails
    found = tails.get(full)
    if found is None:
        found = tails[full] = _tail(v, full)
    return found


def _rows(tag: bytes, identities: Sequence[bytes], tails: Sequence[bytes]) -> list[bytes]:
    """The encoded parts of repeated RuntimeVerdict field ``tag``, three for each runtime's row:
    the field's tag and length, the runtime's identity (fields 1-3), then its verdict's other
    fields — in field order, as the message itself would encode. The loop is a large answer's
    cost: it inlines ``_head``'s fast path."""
    heads = _heads(tag)
    limit = len(heads)
    parts: list[bytes] = []
    for ident, tail in zip(identities, tails, strict=True):
        size = len(ident) + len(tail)
        parts += (heads[size] if size < limit else _head(tag, size), ident, tail)
    return parts


def _fitting(parts: list[bytes], room: int) -> int:
    """How many of the rows ``_rows`` made fit in ``room`` bytes."""
    sizes = (len(h) + len(i) + len(t) for h, i, t in zip(parts[::3], parts[1::3], parts[2::3], strict=True))
    return bisect_right(list(accumulate(sizes)), room)


_RANKING_TAG = _varint(pb.SelectResponse.DESCRIPTOR.fields_by_name["ranking"].number << 3 | 2)


def ranking(verdicts: Sequence[RuntimeVerdict]) -> bytes:
    """SelectResponse.ranking, encoded: each runtime's identity (fields 1-3, as a
    RuntimeVerdict's), then the rest of its RankedRuntime."""
    parts: list[bytes] = []
    for e in verdicts:
        row = _identity(e.runtime) + _ranked_tail(e)
        parts += (_head(_RANKING_TAG, len(row)), row)
    return b"".join(parts)


def _ranked_tail(e: RuntimeVerdict) -> bytes:
    """A ranked runtime's fields after its identity, encoded once for a verdict and each shape
    of runtime it stands for (verdicts that say the same are shared across shapes, whose
    entries differ)."""
    ranked = _kept_by(_BY_VERDICT, e.verdict, _Wires).ranked
    tail = ranked.get(e.runtime.shape)
    if tail is None:
        tail = ranked[e.runtime.shape] = ranked_tail(e).SerializeToString()
    return tail
