"""The gRPC metadata policyd and its clients speak besides the messages, named once, and how
their text values travel: gRPC's ASCII metadata takes printable ASCII only (a field path such
as ``spec.modèle`` fails the whole call as ``INTERNAL: Invalid metadata``), so values are
percent-encoded as gRPC encodes its own ``grpc-message`` — printable ASCII but ``%`` as it is,
every other byte of the UTF-8 as ``%XX`` — and read back with ``decoded``."""

from __future__ import annotations

from urllib.parse import quote, unquote

# request metadata: a request's field validation (Strict, Warn or Ignore)
VALIDATION_KEY = "policyd-field-validation"
# request metadata, under policyd --cluster: Kind=resourceVersion pairs, comma-separated — answer
# from a catalog that has seen each kind at least that far
AT_LEAST_KEY = "policyd-catalog-at-least"
# trailers: the field validation's warnings; the request field a refusal is about (both encoded)
WARNING_KEY = "policyd-warning"
FIELD_KEY = "policyd-field"

_AS_IS = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def encoded(text: str) -> str:
    """``text`` as a metadata value: unchanged when it is printable ASCII without ``%``."""
    return quote(text, safe=_AS_IS, errors="surrogatepass")


def decoded(value: str | bytes) -> str:
    """A value ``encoded`` made, as it was written."""
    text = value.decode("ascii", errors="replace") if isinstance(value, bytes) else value
    return unquote(text, errors="surrogatepass")
