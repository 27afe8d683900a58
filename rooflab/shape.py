"""A bare attention shape for kernel engineers: (B, H, H_kv, T, d[, d_v]) priced without a model file.

`rooflab report --shape B,H,H_kv,T,d[,d_v]` and `rooflab explain --shape ...` take the shape a kernel benchmark
states (batch B, query heads H, KV heads H_kv, sequence length T, head dim d of q and k, and optionally d_v of v
and o). Prefill prices B sequences of T tokens; decode reads T as each sequence's context.

The shape becomes a BareAttention: a ModelSpec of one full-attention layer of those AttentionHeads and no weights
(no MLP, no embeddings), so rooflab.cost.layers' one walk over a model's layers prices it: the same cost functions,
the same aggregator and the same predictions as a model's layer. `report --shape 1,32,8,8192,128` prices each row
exactly as `report -m llama-3-8b -T 8192` prices one of Llama-3-8B's layers. Figures about a model's weights are
zero (the naive ceiling sets the whole of HBM against S and P; a decode step reads no weights).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InputError, shown
from .limits import MAX_BATCH, MAX_TOKENS
from .specs import AttentionHeads, ModelSpec
from .specs.heads import MAX_HEAD_DIM, MAX_HEADS
from .units import parse_count

#: The fields of --shape, in order, with their range and what each means.
SHAPE_FIELDS = (("B", 1, MAX_BATCH, "sequences in the batch"),
                ("H", 1, MAX_HEADS, "query heads"),
                ("H_kv", 1, MAX_HEADS, "key/value heads"),
                ("T", 1, MAX_TOKENS, "tokens a sequence (prefill) or its context (decode)"),
                ("d", 1, MAX_HEAD_DIM, "head dim of q and k"),
                ("d_v", 1, MAX_HEAD_DIM, "head dim of v and o (optional; default d)"))
#: What --shape expects, for messages.
SHAPE_FORMAT = "B,H,H_kv,T,d[,d_v]"


@dataclass(frozen=True)
class _NoParameters:
    """A bare shape's parameter count: none (what explain's 'Does it fit?' reads)."""

    total: int = 0

    def by_component(self) -> dict[str, int]:
        return {}


@dataclass(frozen=True)
class BareAttention(ModelSpec):
    """One full-attention layer of given heads with no model around it: what a --shape prices (build one with
    BareAttention.of(heads)).

    A ModelSpec of one layer whose type is 'full', so rooflab.cost.layers (layer_walk, layer_heads, layer_prefill,
    layer_decode, layer_splits), the naive ceiling, the KV layout and explain walk it as they walk any model. Its
    weights are none: weight_bytes 0, no parameters. hidden_size is H x d_v (the width o projects from);
    ffn_size and vocab_size are 1, read by nothing a shape reaches (report --phase step refuses a shape)."""

    @classmethod
    def of(cls, heads: AttentionHeads) -> "BareAttention":
        if not isinstance(heads, AttentionHeads):
            raise InputError(f"BareAttention.of takes AttentionHeads, got {shown(heads)}")
        dv = f",{heads.v_head_dim}" if heads.v_head_dim else ""
        name = f"shape {heads.num_qo_heads}/{heads.num_kv_heads}x{heads.head_dim}{dv}"
        wide = f", d_v {heads.value_dim}" if heads.v_head_dim else ""
        display = (f"attention H {heads.num_qo_heads}, H_kv {heads.num_kv_heads}, d {heads.head_dim}{wide} "
                   f"(one layer, no model)")
        return cls(name=name, display_name=display, num_layers=1,
                   hidden_size=min(heads.num_qo_heads * heads.value_dim, 1 << 20), num_qo_heads=heads.num_qo_heads,
                   num_kv_heads=heads.num_kv_heads, head_dim=heads.head_dim, ffn_size=1, vocab_size=1,
                   max_context_len=MAX_TOKENS, source="rooflab --shape (no model: one attention layer)",
                   v_head_dim=heads.v_head_dim)

    @property
    def parameters(self) -> _NoParameters:
        return _NoParameters()

    @property
    def total_parameters(self) -> int:
        return 0

    @property
    def active_parameters(self) -> int:
        return 0

    def weight_bytes(self, *args, **kwargs) -> int:
        """No weights: a bare shape is attention alone."""
        return 0


@dataclass(frozen=True)
class AttentionShape:
    """A parsed --shape: `batch` sequences of `seq_len` tokens (decode: of that context) through `heads`."""

    batch: int
    seq_len: int
    heads: AttentionHeads

    @property
    def layer(self) -> BareAttention:
        return BareAttention.of(self.heads)

    def describe(self) -> str:
        h = self.heads
        dv = f", d_v {h.value_dim}" if h.value_dim != h.head_dim else ""
        return (f"B {self.batch:,}, H {h.num_qo_heads}, H_kv {h.num_kv_heads}, T {self.seq_len:,}, "
                f"d {h.head_dim}{dv}")


def parse_shape(text: object) -> AttentionShape:
    """'1,32,8,8192,128' (B,H,H_kv,T,d) or with a sixth field d_v: an AttentionShape. Each field a whole number in
    its range (T takes 8k / 8K as --seq-len does); H a multiple of H_kv. Any problem is an InputError naming
    --shape, the field and the value."""
    if not isinstance(text, str):
        raise InputError(f"--shape takes {SHAPE_FORMAT} as text, got {shown(text)}")
    parts = [p.strip() for p in text.split(",")]
    if not text.strip():
        raise InputError(f"--shape is empty; give {SHAPE_FORMAT} (e.g. 1,32,8,8192,128)")
    if not 5 <= len(parts) <= 6:
        raise InputError(f"--shape {shown(text)}: {len(parts)} field{'s' if len(parts) != 1 else ''}; give "
                         f"{SHAPE_FORMAT}, five or six whole numbers (e.g. 1,32,8,8192,128)")
    values = []
    for part, (name, lo, hi, meaning) in zip(parts, SHAPE_FIELDS):
        if not part:
            raise InputError(f"--shape {shown(text)}: {name} ({meaning}) is empty")
        try:
            value = parse_count(part)
        except ValueError as exc:
            raise InputError(f"--shape {shown(text)}: {name} ({meaning}): {exc}") from None
        if not lo <= value <= hi:
            raise InputError(f"--shape {shown(text)}: {name} ({meaning}) = {value:,} is outside {lo:,} .. {hi:,}")
        values.append(value)
    batch, h, h_kv, seq_len, d = values[:5]
    d_v = values[5] if len(values) == 6 else None
    if h % h_kv:
        raise InputError(f"--shape {shown(text)}: H ({h}) must be a multiple of H_kv ({h_kv}): each KV head serves "
                         f"H / H_kv query heads")
    return AttentionShape(batch, seq_len, AttentionHeads(h, h_kv, d, d_v if d_v != d else None))


__all__ = ["SHAPE_FIELDS", "SHAPE_FORMAT", "AttentionShape", "BareAttention", "parse_shape"]
