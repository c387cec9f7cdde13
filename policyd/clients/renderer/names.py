"""Names and label keys as OME derives them (pkg/constants): Kubernetes caps names and label
values at 63 characters, and OME shortens long ones in its own way, which a rendered object must
repeat to be the object OME made."""

from __future__ import annotations

import hashlib

DNS_LABEL_MAX = 63
_HASH_PREFIX = 8
_LWS_NAME_KEEP = 50  # LWSName keeps the last 50 characters
_MODEL_LABEL_DOMAIN = "models.ome.io"
_MODEL_LABEL_NAME_MAX = 49  # 63 less the domain and its slash
_MIN_NAMESPACE = 8


def truncated(name: str, max_length: int = DNS_LABEL_MAX) -> str:
    """OME's TruncateNameWithMaxLength: a name that is too long becomes the first 8 hex digits of
    its SHA-256 (a leading digit turned into ``a``, so it starts with a letter), a dash, and the
    end of the name."""
    return _hashed(name, max_length, letter_first=True)


def lws_name(component_name: str) -> str:
    """OME's LWSName: ``lws-`` and the last 50 characters of the component's name."""
    return f"lws-{component_name[-_LWS_NAME_KEEP:]}"


def _hashed(name: str, max_length: int, letter_first: bool = False) -> str:
    """OME's truncateWithHash; ``letter_first`` for truncateWithHashTweaks."""
    if len(name) <= max_length:
        return name
    prefix = hashlib.sha256(name.encode()).hexdigest()[:_HASH_PREFIX]
    if letter_first and prefix[0].isdigit():
        prefix = "a" + prefix[1:]
    keep = max_length - _HASH_PREFIX - 1
    return prefix[:max_length] if keep <= 0 else f"{prefix}-{name[len(name) - keep :]}"


def model_node_label(model_name: str, namespace: str | None) -> str:
    """The node label the model agent sets where a model is ready: GetClusterBaseModelLabel for a
    ClusterBaseModel (no namespace), GetBaseModelLabel for a BaseModel."""
    if not namespace:
        kind = "clusterbasemodel"
        return f"{_MODEL_LABEL_DOMAIN}/{kind}.{_hashed(model_name, _MODEL_LABEL_NAME_MAX - len(kind) - 1)}"
    kind = "basemodel"
    space = _MODEL_LABEL_NAME_MAX - len(kind) - 2  # the dots around "basemodel"
    if len(namespace) + len(model_name) <= space:
        return f"{_MODEL_LABEL_DOMAIN}/{namespace}.{kind}.{model_name}"
    namespace_max = space // 2 if space < 2 * _MIN_NAMESPACE else min(len(namespace), _MIN_NAMESPACE)
    model_max = space - namespace_max
    return f"{_MODEL_LABEL_DOMAIN}/{_hashed(namespace, namespace_max)}.{kind}.{_hashed(model_name, model_max)}"
