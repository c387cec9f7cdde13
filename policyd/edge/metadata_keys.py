"""The gRPC metadata policyd and its clients speak besides the messages, named once."""

from __future__ import annotations

# request metadata: a request's field validation (Strict, Warn or Ignore)
VALIDATION_KEY = "policyd-field-validation"
# request metadata, under policyd --cluster: Kind=resourceVersion pairs, comma-separated — answer
# from a catalog that has seen each kind at least that far
AT_LEAST_KEY = "policyd-catalog-at-least"
# trailers: the field validation's warnings; the request field a refusal is about
WARNING_KEY = "policyd-warning"
FIELD_KEY = "policyd-field"
