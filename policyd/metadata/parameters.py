"""Parameter counts from a transformers ``config.json``, without the weights.

Covered, by ``model_type`` (every other type gives None: size unknown, not an error):

- Decoder-only transformers with grouped-query attention and a gated (SwiGLU/GeGLU) MLP:
  ``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``gemma``, ``gemma2``, ``gemma3_text``, ``phi3``,
  ``internlm2``, ``baichuan``, ``xverse``, ``exaone``, ``stablelm``, ``qwen`` (Qwen 1),
  ``chatglm`` (ChatGLM2/3, GLM-4).
- Mixture-of-experts decoders, counting every expert: ``mixtral``, ``phimoe``, ``qwen2_moe``,
  ``qwen3_moe``, ``gpt_oss``.
- Multi-head latent attention (MLA) decoders: ``deepseek_v2``, ``deepseek_v3``, ``kimi_k2`` (all
  experts; DeepSeek's multi-token-prediction layers are not counted: transformers does not load
  them) and ``minicpm3``.
- BERT-style encoders served as ``*Model`` (``bert``, ``roberta``, ``xlm-roberta``), pooler included.

Multimodal models (``llava``, ``qwen2_vl``, ``gemma3``, ``mllama``, …) are not covered: their
vision towers are not counted here, and their nested ``text_config`` usually omits the values
left at their defaults. The head follows the class in ``architectures``: ``*ForCausalLM`` and
``*LMHeadModel`` add an ``lm_head`` unless ``tie_word_embeddings``, ``*ForSequenceClassification``
a ``score`` layer, a bare ``*Model`` none; any other head gives None. So do options a family has
that change its weights but are not modelled here (e.g. StableLM's ``qk_layernorm``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Far beyond any real model; counting layer by layer must not stall on a hostile config.
_MAX_LAYERS = 10_000


class _Unknown(Exception):
    """The config lacks a value the count needs, or uses a layout not modelled here."""


class _Config:
    """Typed reads of a config, raising _Unknown rather than guessing."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data

    def number(self, key: str, default: int | None = None, minimum: int = 0) -> int:
        value = self.data.get(key)
        if value is None:
            value = default
        # bool is an int subclass; a flag where a size belongs is not a size.
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise _Unknown(key)
        return value

    def flag(self, key: str | bool, default: bool = False) -> bool:
        if isinstance(key, bool):
            return key
        value = self.data.get(key, default)
        return default if value is None else bool(value)

    def numbers(self, key: str) -> list[int]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
            raise _Unknown(key)
        return value

    @property
    def hidden(self) -> int:
        return self.number("hidden_size")

    @property
    def heads(self) -> int:
        return self.number("num_attention_heads", minimum=1)

    @property
    def kv_heads(self) -> int:
        return self.number("num_key_value_heads", self.heads)

    @property
    def head_dim(self) -> int:
        return self.number("head_dim", self.hidden // self.heads)


def _linear(inputs: int, outputs: int, bias: bool = False) -> int:
    return inputs * outputs + (outputs if bias else 0)


def _gated(hidden: int, intermediate: int, bias: bool = False) -> int:
    """gate, up and down projections of a SwiGLU/GeGLU MLP."""
    return 2 * _linear(hidden, intermediate, bias) + _linear(intermediate, hidden, bias)


# -- attention, per layer --------------------------------------------------------------------


@dataclass(frozen=True)
class _Gqa:
    """q, k, v, o projections with grouped-query attention. A bias is a config key or fixed."""

    qkv_bias: str | bool = "attention_bias"
    o_bias: str | bool = "attention_bias"
    qk_norm: bool = False  # per-head-dim RMSNorm on q and k (Qwen3, Gemma 3)
    sinks: bool = False  # one learned attention sink per head (gpt-oss)

    def __call__(self, c: _Config) -> int:
        h, q_dim, kv_dim = c.hidden, c.heads * c.head_dim, c.kv_heads * c.head_dim
        qkv_bias = c.flag(self.qkv_bias)
        total = _linear(h, q_dim, qkv_bias) + 2 * _linear(h, kv_dim, qkv_bias)
        total += _linear(q_dim, h, c.flag(self.o_bias))
        total += 2 * c.head_dim if self.qk_norm else 0
        return total + (c.heads if self.sinks else 0)


def _mla(c: _Config) -> int:
    """DeepSeek's multi-head latent attention: low-rank q (optional) and a compressed kv."""
    if c.flag("attention_bias"):
        raise _Unknown("attention_bias")
    h, heads = c.hidden, c.heads
    nope, rope = c.number("qk_nope_head_dim"), c.number("qk_rope_head_dim")
    v_dim, kv_rank = c.number("v_head_dim", c.hidden // heads), c.number("kv_lora_rank")
    q_rank = c.data.get("q_lora_rank")
    if q_rank is None:
        q = _linear(h, heads * (nope + rope))
    else:
        q_rank = c.number("q_lora_rank")
        q = _linear(h, q_rank) + q_rank + _linear(q_rank, heads * (nope + rope))
    kv = _linear(h, kv_rank + rope) + kv_rank + _linear(kv_rank, heads * (nope + v_dim))
    return q + kv + _linear(heads * v_dim, h)


# -- MLP, per layer (given the layer index: some layers of a MoE model are dense) ------------


def _dense(c: _Config, layer: int) -> int:
    return _gated(c.hidden, c.number("intermediate_size"), c.flag("mlp_bias"))


def _experts(experts_key: str, intermediate_key: str) -> Callable[[_Config, int], int]:
    """Mixtral-style MoE in every layer: a router and that many gated experts."""

    def count(c: _Config, layer: int) -> int:
        experts = c.number(experts_key)
        return _linear(c.hidden, experts) + experts * _gated(c.hidden, c.number(intermediate_key))

    return count


def _qwen_moe(c: _Config, layer: int) -> int:
    """Qwen2-MoE / Qwen3-MoE: sparse layers every ``decoder_sparse_step``, minus
    ``mlp_only_layers``; Qwen2-MoE adds a gated shared expert."""
    step = c.number("decoder_sparse_step", 1)
    if layer in c.numbers("mlp_only_layers") or step == 0 or (layer + 1) % step:
        return _dense(c, layer)
    total = _experts("num_experts", "moe_intermediate_size")(c, layer)
    shared = c.number("shared_expert_intermediate_size", 0)
    return total + (_gated(c.hidden, shared) + _linear(c.hidden, 1) if shared else 0)


def _deepseek_moe(c: _Config, layer: int) -> int:
    """Dense for the first ``first_k_dense_replace`` layers, then routed plus shared experts."""
    freq = c.number("moe_layer_freq", 1, minimum=1)
    if c.data.get("n_routed_experts") is None or layer < c.number("first_k_dense_replace", 0) or layer % freq:
        return _dense(c, layer)
    h, routed, expert = c.hidden, c.number("n_routed_experts"), c.number("moe_intermediate_size")
    total = _linear(h, routed) + (routed + c.number("n_shared_experts", 0)) * _gated(h, expert)
    # noaux_tc routing (V3, Kimi K2) keeps a learned bias per expert.
    return total + (routed if c.data.get("topk_method") == "noaux_tc" else 0)


def _gpt_oss_moe(c: _Config, layer: int) -> int:
    """gpt-oss: biased router and experts (fused gate_up with bias, down with bias)."""
    h, experts, inner = c.hidden, c.number("num_local_experts"), c.number("intermediate_size")
    return _linear(h, experts, bias=True) + experts * (_linear(h, 2 * inner, True) + _linear(inner, h, True))


# -- families ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Decoder:
    attention: Callable[[_Config], int] = field(default_factory=_Gqa)
    mlp: Callable[[_Config, int], int] = _dense
    norm_bias: bool = False  # LayerNorm (weight and bias) instead of RMSNorm (weight only)
    norms_per_layer: int = 2  # Gemma 2/3 add post-attention and post-feedforward norms
    tied_default: bool = False  # tie_word_embeddings when the config leaves it out
    lm_head_bias: str | bool = False
    always_lm_head: bool = False  # ChatGLM's ``*Model`` class carries its output layer
    rename: Mapping[str, str] = field(default_factory=dict)  # standard key -> this family's key
    unsupported: tuple[str, ...] = ()  # flags that change the layout in ways not modelled here

    def count(self, data: Mapping[str, Any], architecture: str) -> int:
        merged = dict(data)
        for standard, own in self.rename.items():
            if own in data:
                merged[standard] = data[own]
        c = _Config(merged)
        if any(c.flag(key) for key in self.unsupported):
            raise _Unknown(self.unsupported)
        h, vocab, layers = c.hidden, c.number("vocab_size"), c.number("num_hidden_layers")
        if layers > _MAX_LAYERS:
            raise _Unknown("num_hidden_layers")
        norm = h * (2 if self.norm_bias else 1)
        body = sum(self.attention(c) + self.mlp(c, i) + self.norms_per_layer * norm for i in range(layers))
        embeddings = vocab * h
        tied = c.flag("tie_word_embeddings", self.tied_default)
        lm_head = 0 if tied else _linear(h, vocab, c.flag(self.lm_head_bias))
        return embeddings + body + norm + _head(architecture, c, lm_head, self.always_lm_head)


def _head(architecture: str, c: _Config, lm_head: int, always_lm_head: bool) -> int:
    if always_lm_head or architecture.endswith(("ForCausalLM", "LMHeadModel")):
        return lm_head
    if architecture.endswith("ForSequenceClassification"):
        labels = c.data.get("id2label")
        return _linear(c.hidden, len(labels) if isinstance(labels, Mapping) and labels else 2)
    if _bare(architecture):
        return 0
    raise _Unknown(architecture)


def _bare(architecture: str) -> bool:
    """A base model class (``MistralModel``, ``BertModel``), not one with a task head such as
    ``InternLM2ForRewardModel``."""
    return architecture.endswith("Model") and "For" not in architecture


def _chatglm(data: Mapping[str, Any], architecture: str) -> int:
    """ChatGLM2/3 and GLM-4: fused qkv with multi-query groups, fused gate_up."""
    c = _Config(data)
    kv_heads = c.number("multi_query_group_num") if c.flag("multi_query_attention") else c.heads
    standard = {
        **data,
        "num_hidden_layers": c.number("num_layers"),
        "intermediate_size": c.number("ffn_hidden_size"),
        "vocab_size": c.number("padded_vocab_size"),
        "head_dim": c.number("kv_channels"),
        "num_key_value_heads": kv_heads,
        "mlp_bias": c.flag("add_bias_linear"),
    }
    layout = _Decoder(_Gqa(qkv_bias="add_qkv_bias", o_bias="add_bias_linear"), always_lm_head=True)
    return layout.count(standard, architecture)


def _qwen1(data: Mapping[str, Any], architecture: str) -> int:
    """Qwen 1: ``intermediate_size`` is the sum of its two gated projections."""
    c = _Config(data)
    bias = not c.flag("no_bias", True)
    standard = {
        **data,
        "intermediate_size": c.number("intermediate_size") // 2,
        "head_dim": c.number("kv_channels"),
        "mlp_bias": bias,
    }
    layout = _Decoder(_Gqa(qkv_bias=True, o_bias=bias))
    return layout.count(standard, architecture)


def _bert(data: Mapping[str, Any], architecture: str) -> int:
    """Embeddings (word, position, token type, LayerNorm), post-norm layers, pooler."""
    if not _bare(architecture):
        raise _Unknown(architecture)
    c = _Config(data)
    h, inner = c.hidden, c.number("intermediate_size")
    positions, types = c.number("max_position_embeddings"), c.number("type_vocab_size", 2)
    embeddings = (c.number("vocab_size") + positions + types) * h + 2 * h
    layer = 4 * _linear(h, h, True) + _linear(h, inner, True) + _linear(inner, h, True) + 2 * 2 * h
    return embeddings + c.number("num_hidden_layers") * layer + _linear(h, h, True)


_LLAMA = _Decoder()
_QWEN3 = _Decoder(_Gqa(qk_norm=True))
_MLA = _Decoder(_mla, _deepseek_moe)

_FAMILIES: dict[str, Callable[[Mapping[str, Any], str], int]] = {
    "llama": _LLAMA.count,
    "mistral": _LLAMA.count,
    "phi3": _LLAMA.count,  # fused qkv and gate_up, same weights
    "baichuan": _LLAMA.count,
    "xverse": _LLAMA.count,
    "exaone": _Decoder(rename={"num_hidden_layers": "num_layers"}).count,
    "internlm2": _Decoder(_Gqa(qkv_bias="bias", o_bias="bias")).count,
    "qwen2": _Decoder(_Gqa(qkv_bias=True, o_bias=False)).count,
    "qwen3": _QWEN3.count,
    "gemma": _Decoder(tied_default=True).count,
    "gemma2": _Decoder(norms_per_layer=4, tied_default=True).count,
    "gemma3_text": _Decoder(_Gqa(qk_norm=True), norms_per_layer=4, tied_default=True).count,
    "stablelm": _Decoder(
        _Gqa(qkv_bias="use_qkv_bias", o_bias=False),
        norm_bias=True,
        unsupported=("qk_layernorm", "use_parallel_residual"),
    ).count,
    "mixtral": _Decoder(mlp=_experts("num_local_experts", "intermediate_size")).count,
    "phimoe": _Decoder(
        mlp=_experts("num_local_experts", "intermediate_size"), norm_bias=True, lm_head_bias="lm_head_bias"
    ).count,
    "qwen2_moe": _Decoder(_Gqa(qkv_bias=True, o_bias=False), _qwen_moe).count,
    "qwen3_moe": _Decoder(_Gqa(qk_norm=True), _qwen_moe).count,
    "gpt_oss": _Decoder(_Gqa(sinks=True), _gpt_oss_moe).count,
    "deepseek_v2": _MLA.count,
    "deepseek_v3": _MLA.count,
    "kimi_k2": _MLA.count,
    "minicpm3": _Decoder(_mla, tied_default=True).count,
    "chatglm": _chatglm,
    "qwen": _qwen1,
    "bert": _bert,
    "roberta": _bert,
    "xlm-roberta": _bert,
}


def parameter_count(config: Mapping[str, Any], architecture: str) -> int | None:
    """Number of parameters of the model ``config`` describes, or None when its family is not
    covered or the config lacks a value the count needs."""
    family = _FAMILIES.get(str(config.get("model_type")))
    if family is None:
        return None
    try:
        return family(config, architecture)
    except _Unknown:
        return None
