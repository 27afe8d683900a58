"""Layer types: what one layer's attention sees, and so what its KV cache (or state) holds per token or sequence.

    full      every earlier token (MHA / GQA / MQA)           KV  h_kv (d + d_v) b per token
    sliding   keys j with i - W < j <= i (a window of W)      the same per token, at most W tokens kept
    chunked   keys in the query's own chunk of C tokens       the same per token, the current chunk kept
    mla       one latent of d_c + d_R per token, shared by    (d_c + d_R) b per token: 576 x 2 = 1152 bytes
              every query head (DeepSeek-V3, Kimi K2)         in bf16, 576 in fp8, 656 in V3.2's sparse layout;
              (+ DeepSeek-V3.2's lightning indexer key)        + d_I fp8 + its fp32 scales: 132 bytes
    linear    a recurrent state of fixed size per sequence    h_v d_k d_v (state) + (K - 1)(2 h_k d_k + h_v d_v)
              (Gated DeltaNet in Qwen3-Next)                  (short-convolution state), elements per sequence
              mixer mamba1 (Jamba): d_inner d_state state     + (K - 1) d_inner conv
              mixer mamba2 (Bamba, Granite 4.0-H): n_heads    + (K - 1)(d_inner + 2 n_groups d_state) conv,
              head_dim d_state state                          d_inner = n_heads head_dim (state_elements)

A layer type may add sinks: one learned logit per query head that joins the softmax denominator
(gpt-oss); they change the state and the merge, not the traffic. Sources: DeepSeek-V3 technical
report (section 2.1.1, MLA); gpt-oss model card (alternating banded attention, 128-token windows,
sinks); Gemma 3 technical report (5 local layers of window 1024 per global one); Llama 4 model card
(chunked local attention); Qwen3-Next model card and config (Gated DeltaNet with a full-attention
layer every 4); FlashMLA's fp8 cache format (656 bytes per token per layer); Gu and Dao, "Mamba" (section 3,
the selective scan's d_inner x d_state state) and Dao and Gu, "Transformers are SSMs" (Mamba-2: heads of
head_dim x d_state, B and C shared by n_groups); the state shapes under tensor parallelism as vLLM v0.11.2
computes them (vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator: mamba1_state_shape,
mamba2_state_shape with extra_groups_for_head_shards), which SGLang v0.5.23 shares
(python/sglang/srt/configs/mamba_utils.py Mamba2StateShape.create, create_full_rank for Mamba-1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import SpecError
from ..fields import spec_field, validate_fields
from ..limits import MAX_TOKENS
from ..units import FP32_BYTES, DType
from ..vocab import LayerKind, WindowAllocation, _Named
from .heads import MAX_HEAD_DIM, MAX_HEADS, AttentionHeads


class LinearMixer(_Named):
    """What a linear layer's recurrence is, and so the shape of its state (LayerType.state_elements): Gated DeltaNet
    (Qwen3-Next), Mamba-1's selective scan (Jamba) or Mamba-2's heads with shared B and C groups (Bamba, Granite
    4.0-H). The one definition; specs, the hf readers and the engines import it from here."""

    gated_deltanet = "gated_deltanet"
    mamba1 = "mamba1"
    mamba2 = "mamba2"

    @property
    def is_mamba(self) -> bool:
        return self is not LinearMixer.gated_deltanet


#: DeepSeek-V3.2's lightning indexer keeps one key of index_head_dim per token and layer, in fp8 with one fp32
#: scale per INDEXER_QUANT_BLOCK values, whatever the KV cache's dtype (vLLM's Indexer allocates
#: DeepseekV32IndexerCache(head_dim=d_I + d_I // 128 * 4, dtype=uint8): vllm/model_executor/models/deepseek_v2.py,
#: main at commit 002d607); one copy per GPU (the indexer is replicated, not split by TP).
INDEXER_QUANT_BLOCK = 128

#: DeepSeek-V3.2's fp8 sparse-attention cache layout, bytes per token per layer: 512 e4m3 latent values,
#: 4 fp32 scales (one per 128-value tile) and the 64 rope dims kept in bf16 (FlashMLA's fp8 format).
MLA_SPARSE_FP8_BYTES = 512 + 4 * FP32_BYTES + 64 * DType.bf16.bytes

_MLA_FIELDS = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim")
_LINEAR_FIELDS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                  "linear_conv_kernel")
_MAMBA1_FIELDS = ("ssm_inner", "ssm_state", "ssm_dt_rank", "linear_conv_kernel")
_MAMBA2_FIELDS = ("ssm_heads", "ssm_head_dim", "ssm_groups", "ssm_state", "linear_conv_kernel")
#: The fields each kind needs (a linear layer's by its mixer); any other kind's own fields are refused on it.
_NEEDS = {LayerKind.full: (), LayerKind.sliding: ("window",), LayerKind.chunked: ("chunk",),
          LayerKind.mla: _MLA_FIELDS}
_MIXER_NEEDS = {LinearMixer.gated_deltanet: _LINEAR_FIELDS, LinearMixer.mamba1: _MAMBA1_FIELDS,
                LinearMixer.mamba2: _MAMBA2_FIELDS}
_INDEXER_FIELDS = ("index_head_dim", "index_n_heads")
_SSM_FIELDS = ("ssm_inner", "ssm_state", "ssm_dt_rank", "ssm_heads", "ssm_head_dim", "ssm_groups")
_OWN = ("window", "chunk", "q_lora_rank", *_MLA_FIELDS, *_LINEAR_FIELDS, "state_dtype", *_INDEXER_FIELDS,
        "mixer", *_SSM_FIELDS)


@dataclass(frozen=True)
class LayerType:
    """One kind of layer in a model's stack; the model's `layer_pattern` says which layer has which."""

    kind: LayerKind = spec_field(doc="full, sliding, chunked, mla or linear")
    window: Optional[int] = spec_field(1, MAX_TOKENS, "tokens", "sliding: keys j with i - W < j <= i", default=None)
    chunk: Optional[int] = spec_field(1, MAX_TOKENS, "tokens", "chunked: a query sees its own chunk", default=None)
    sinks: bool = spec_field(doc="one learned logit per query head in the softmax denominator", default=False)
    num_qo_heads: Optional[int] = spec_field(1, MAX_HEADS, "heads", "where they differ from the model's", default=None)
    num_kv_heads: Optional[int] = spec_field(1, MAX_HEADS, "heads", default=None)
    head_dim: Optional[int] = spec_field(1, MAX_HEAD_DIM, default=None)
    kv_lora_rank: Optional[int] = spec_field(1, 1 << 16, doc="mla: d_c, the latent's width", default=None)
    qk_rope_head_dim: Optional[int] = spec_field(1, 1 << 16, doc="mla: d_R, the shared rope key's width", default=None)
    qk_nope_head_dim: Optional[int] = spec_field(1, 1 << 16, doc="mla: each head's non-rope q.k width", default=None)
    q_lora_rank: Optional[int] = spec_field(1, 1 << 16, doc="mla: the query's low-rank width (none: full q)",
                                            default=None)
    index_head_dim: Optional[int] = spec_field(1, 1 << 16, doc="mla: the lightning indexer's key width d_I (DeepSeek-V3.2; "
                                               "none: no indexer)", default=None)
    index_n_heads: Optional[int] = spec_field(1, 1 << 16, "heads", "mla: the lightning indexer's query heads",
                                              default=None)
    linear_num_key_heads: Optional[int] = spec_field(1, 1 << 16, "heads", default=None)
    linear_num_value_heads: Optional[int] = spec_field(1, 1 << 16, "heads", default=None)
    linear_key_head_dim: Optional[int] = spec_field(1, 1 << 16, default=None)
    linear_value_head_dim: Optional[int] = spec_field(1, 1 << 16, default=None)
    linear_conv_kernel: Optional[int] = spec_field(1, 1 << 10, doc="linear: the short convolution's width",
                                                   default=None)
    state_dtype: Optional[DType] = spec_field(doc="linear: the recurrent state's type (default: the KV cache's)",
                                              default=None)
    mixer: Optional[LinearMixer] = spec_field(doc="linear: gated_deltanet (default), mamba1 or mamba2", default=None)
    ssm_inner: Optional[int] = spec_field(1, 1 << 20, doc="mamba1: d_inner, the scanned width (mamba_expand x "
                                          "hidden_size)", default=None)
    ssm_state: Optional[int] = spec_field(1, 1 << 16, doc="mamba1, mamba2: d_state, the state per channel or "
                                          "head dim", default=None)
    ssm_dt_rank: Optional[int] = spec_field(1, 1 << 16, doc="mamba1: the rank of the time-step projection",
                                            default=None)
    ssm_heads: Optional[int] = spec_field(1, 1 << 16, "heads", "mamba2: the SSM heads", default=None)
    ssm_head_dim: Optional[int] = spec_field(1, 1 << 16, doc="mamba2: each SSM head's width", default=None)
    ssm_groups: Optional[int] = spec_field(1, 1 << 16, doc="mamba2: n_groups, the B and C groups the heads share",
                                           default=None)

    def __post_init__(self) -> None:
        validate_fields(self)
        where = f"layer type '{self.kind.value}'"
        needs = _MIXER_NEEDS[self.linear_mixer] if self.kind is LayerKind.linear else _NEEDS[self.kind]
        for name in needs:
            if getattr(self, name) is None:
                raise SpecError(where, name, None, f"a {self.kind.value} layer needs it")
        for name in _OWN:
            if name not in needs and getattr(self, name) is not None and not \
                    (self.kind is LayerKind.mla and name in ("q_lora_rank", *_INDEXER_FIELDS)) and not \
                    (self.kind is LayerKind.linear and name in ("state_dtype", "mixer")):
                raise SpecError(where, name, getattr(self, name), f"does not apply to a {self.kind.value} layer")
        if (self.index_head_dim is None) != (self.index_n_heads is None):
            raise SpecError(where, "index_n_heads", self.index_n_heads, "an indexer needs both index_head_dim and "
                                                                         "index_n_heads")
        if self.sinks and self.kind in (LayerKind.mla, LayerKind.linear):
            raise SpecError(where, "sinks", True, f"a {self.kind.value} layer has no softmax sinks")
        if self.linear_mixer is LinearMixer.mamba2 and self.ssm_heads % self.ssm_groups:
            raise SpecError(where, "ssm_groups", self.ssm_groups, f"must divide ssm_heads ({self.ssm_heads}): each "
                                                                  "group serves a whole number of heads")

    @property
    def linear_mixer(self) -> Optional[LinearMixer]:
        """A linear layer's recurrence (gated_deltanet where `mixer` is not given); None for a softmax layer."""
        if self.kind is not LayerKind.linear:
            return None
        return self.mixer or LinearMixer.gated_deltanet

    @property
    def ssm_width(self) -> int:
        """mamba1, mamba2: d_inner, the width the layer scans (mamba2: ssm_heads x ssm_head_dim)."""
        if self.linear_mixer is LinearMixer.mamba2:
            return self.ssm_heads * self.ssm_head_dim
        return self.ssm_inner

    @property
    def is_attention(self) -> bool:
        """A softmax attention layer over cached keys (every kind but linear)."""
        return self.kind is not LayerKind.linear

    @property
    def is_full(self) -> bool:
        """Every earlier token through its own K and V heads (full): not a window, a chunk, a latent or a state."""
        return self.kind is LayerKind.full

    @property
    def is_windowed(self) -> bool:
        """Attends to a bounded span of recent keys (sliding: a window; chunked: the query's chunk)."""
        return self.kind in (LayerKind.sliding, LayerKind.chunked)

    @property
    def is_latent(self) -> bool:
        """One cached latent shared by every query head, decoded in absorbed form (mla)."""
        return self.kind is LayerKind.mla

    @property
    def has_qkv_projections(self) -> bool:
        """Whether its projections are the Q, K, V and O GEMMs of its heads (full, sliding, chunked); an mla layer's
        (low-rank q and kv) and a linear layer's (gated in-projection and convolution) are priced as one GEMM of
        their weights (specs.parameters.attention_parameters)."""
        return self.kind not in (LayerKind.mla, LayerKind.linear)

    @property
    def splits_by_position(self) -> bool:
        """Whether a KV split by position (decode context or KV parallelism) shares this type's cache out: every
        softmax type's pages (ceil(pages / N) on the fullest GPU, each GPU attending over its share); a linear
        layer's fixed state stays whole on every GPU."""
        return self.kind.splits_by_position

    def value_width(self, heads: AttentionHeads) -> int:
        """The width of what one head's attention returns, and its partial state carries: d_v, or for mla the
        latent's d_c (the absorbed form attends in the latent)."""
        return self.kv_lora_rank if self.kind is LayerKind.mla else heads.value_dim

    def pages_kept(self, context_lens, page_size: int, allocation: WindowAllocation = WindowAllocation.hybrid):
        """Pages one layer of this type keeps for sequences of `context_lens` tokens (int64 array, vectorised):
        full and mla every page; sliding the pages the last `window` tokens touch (ceil(W / P) + 1); chunked the
        current chunk's (ceil(C / P), one more where a chunk can start inside a page); linear none (a state);
        under WindowAllocation.full every softmax type keeps every page."""
        lens = np.asarray(context_lens, dtype=np.int64)
        if self.kind is LayerKind.linear:
            return np.zeros_like(lens)
        full = -(-lens // page_size)
        if allocation is WindowAllocation.full or self.kind in (LayerKind.full, LayerKind.mla):
            return full
        if self.kind is LayerKind.sliding:
            return np.minimum(full, -(-self.window // page_size) + 1)
        return np.minimum(full, -(-self.chunk // page_size) + (1 if self.chunk % page_size else 0))

    @property
    def latent_dim(self) -> int:
        """mla: d_c + d_R, the elements cached per token (576 for DeepSeek-V3)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def heads(self, model_heads: AttentionHeads) -> AttentionHeads:
        """This type's heads: its own where it gives them, else the model's."""
        if self.num_qo_heads is None and self.num_kv_heads is None and self.head_dim is None:
            return model_heads
        return AttentionHeads(self.num_qo_heads or model_heads.num_qo_heads,
                              self.num_kv_heads or model_heads.num_kv_heads,
                              self.head_dim or model_heads.head_dim,
                              None if self.head_dim else model_heads.v_head_dim)

    def cached_heads(self, model_heads: AttentionHeads, tensor_parallel: int = 1) -> AttentionHeads:
        """The heads whose K and V one GPU of a `tensor_parallel` group caches: a softmax type's KV heads split
        (replicated past h_kv, AttentionHeads.shard); an mla latent is the same on every rank, and a linear
        layer caches none, so neither splits."""
        heads = self.heads(model_heads)
        if tensor_parallel > 1 and self.kind not in (LayerKind.mla, LayerKind.linear):
            return heads.shard(tensor_parallel)
        return heads

    def kv_bytes_per_token(self, heads: AttentionHeads, kv_dtype: DType, mla_sparse_fp8: bool = False) -> int:
        """Bytes one cached token takes in one layer of this type (0 for a linear layer: it keeps a state).

        mla: the latent, once for every head: (d_c + d_R) b, or MLA_SPARSE_FP8_BYTES in V3.2's layout; with a
        lightning indexer also its key (indexer_bytes_per_token).
        """
        kv_dtype = DType.of(kv_dtype, "kv_dtype")
        if self.kind is LayerKind.linear:
            return 0
        if self.kind is LayerKind.mla:
            latent = MLA_SPARSE_FP8_BYTES if mla_sparse_fp8 else self.latent_dim * kv_dtype.bytes
            return latent + self.indexer_bytes_per_token
        return self.heads(heads).kv_bytes_per_token(kv_dtype)

    @property
    def indexer_bytes_per_token(self) -> int:
        """The lightning indexer's key of one token in one layer: d_I fp8 values and a 4-byte fp32 scale per whole
        INDEXER_QUANT_BLOCK of them, d_I + (d_I // 128) 4 bytes, as vLLM's DeepseekV32IndexerCache sizes it (floor,
        not ceiling: 128 + 4 = 132 bytes for DeepSeek-V3.2); 0 without an indexer."""
        if self.index_head_dim is None:
            return 0
        return self.index_head_dim * DType.fp8_e4m3.bytes + FP32_BYTES * (self.index_head_dim // INDEXER_QUANT_BLOCK)

    def state_bytes_per_sequence(self, kv_dtype: DType, tensor_parallel: int = 1) -> int:
        """linear: the recurrent state and the convolution state one sequence keeps in one layer on one GPU of
        `tensor_parallel`, both in state_dtype (else the KV cache's dtype); 0 otherwise (state_elements)."""
        if self.kind is not LayerKind.linear:
            return 0
        b = (self.state_dtype or DType.of(kv_dtype, "kv_dtype")).bytes
        conv, temporal = self.state_elements(tensor_parallel)
        return (conv + temporal) * b

    def _state_widths(self, tensor_parallel: int) -> tuple[int, int, int]:
        """(conv channels, state heads or channels, elements per one of them): the widths TP splits."""
        mixer, k = self.linear_mixer, self.linear_conv_kernel
        if mixer is LinearMixer.gated_deltanet:
            conv = 2 * self.linear_num_key_heads * self.linear_key_head_dim + \
                self.linear_num_value_heads * self.linear_value_head_dim
            return conv, self.linear_num_value_heads, self.linear_value_head_dim * self.linear_key_head_dim
        if mixer is LinearMixer.mamba1:
            return self.ssm_inner, self.ssm_inner, self.ssm_state
        groups = self.ssm_groups
        if groups % tensor_parallel:          # vLLM's extra_groups_for_head_shards: each GPU gets whole groups
            groups = tensor_parallel
        return self.ssm_width + 2 * groups * self.ssm_state, self.ssm_heads, self.ssm_head_dim * self.ssm_state

    def state_elements(self, tensor_parallel: int = 1) -> tuple[int, int]:
        """linear: (conv, temporal) elements one sequence keeps in one layer on one GPU of `tensor_parallel`, as
        vLLM's MambaStateShapeCalculator shapes them (module docstring):

            gated_deltanet  conv (K - 1) (2 h_k d_k + h_v d_v) / TP        temporal h_v / TP x d_v x d_k
            mamba1          conv (K - 1) d_inner / TP                      temporal d_inner / TP x d_state
            mamba2          conv (K - 1) (d_inner + 2 G d_state) / TP      temporal n_heads / TP x head_dim x d_state

        where a mamba2 layer's G is n_groups, raised to TP when TP does not divide it (the groups are replicated
        so each GPU holds the groups its heads use; n_groups 1 at TP 4: 4 groups, one a GPU). Where TP does not
        divide a width (the engines refuse it: state_split_problem) each share is rounded up."""
        if self.kind is not LayerKind.linear:
            return 0, 0
        conv, heads, per_head = self._state_widths(tensor_parallel)
        return (self.linear_conv_kernel - 1) * -(-conv // tensor_parallel), -(-heads // tensor_parallel) * per_head

    def state_split_problem(self, tensor_parallel: int) -> Optional[str]:
        """Why `tensor_parallel` GPUs cannot split this linear layer's state (the engines' divide() asserts), or
        None where they can (and for a softmax layer, which keeps no state)."""
        if self.kind is not LayerKind.linear:
            return None
        conv, heads, _ = self._state_widths(tensor_parallel)
        if conv % tensor_parallel or heads % tensor_parallel:
            return f"{conv} conv channels, {heads} state heads or channels"
        return None

    def state_split_error(self, tensor_parallel: int, model_name: str) -> Optional[str]:
        """The refusal when `tensor_parallel` GPUs cannot split this linear layer's state (state_split_problem),
        naming --tp and the widths; None where they can. Deployment.check_model and the engines' state sizes
        (engines.states) raise it, so every command refuses the same way."""
        problem = self.state_split_problem(tensor_parallel)
        if problem is None:
            return None
        return (f"--tp {tensor_parallel} does not divide {model_name}'s {self.linear_mixer.value} state widths "
                f"({problem}); the engines refuse it")

    def key_bytes(self, token_bytes: int, heads: AttentionHeads) -> int:
        """Of the `token_bytes` one cached token takes in a layer of this type, the keys': d / (d + d_v) of a softmax
        type's K and V; all of an mla latent (SGLang sizes its K buffer by the latent and keeps no V buffer)."""
        if self.kind is LayerKind.mla:
            return token_bytes
        own = self.heads(heads)
        return token_bytes * own.head_dim // (own.head_dim + own.value_dim)

    @property
    def allocator_group(self) -> tuple:
        """What vLLM's hybrid allocator groups this type's pages by (its KV cache spec: kind, window, chunk): mla
        with full (vLLM's MLAAttentionSpec is a FullAttentionSpec)."""
        return (LayerKind.full if self.kind is LayerKind.mla else self.kind, self.window, self.chunk)

    def request_tokens(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """Tokens one max_model_len request holds in one layer of this type, as vLLM V1's max_memory_usage_bytes
        counts them (vllm/v1/kv_cache_interface.py): a sliding window W - 1 + the batched tokens, a chunk C + the
        batched tokens, each at most the length; every other type the whole length. The pages: ceil(tokens / P),
        one more for a window (request_pages)."""
        if self.kind is LayerKind.sliding:
            return min(self.window - 1 + max_num_batched_tokens, max_model_len)
        if self.kind is LayerKind.chunked:
            return min(self.chunk + max_num_batched_tokens, max_model_len)
        return max_model_len

    def request_pages(self, max_model_len: int, max_num_batched_tokens: int, page_size: int) -> int:
        """Pages one max_model_len request holds in one layer of this type (vLLM V1's max_memory_usage_bytes / page:
        request_tokens in pages, and one more for a sliding window, whose first page may be partly out of it)."""
        pages = -(-self.request_tokens(max_model_len, max_num_batched_tokens) // page_size)
        return pages + 1 if self.kind is LayerKind.sliding else pages

    def rotary_dim(self, heads: AttentionHeads) -> int:
        """The width rotary embeddings turn a head by: the head dim; mla its rope dims d_R; 0 for a linear layer
        (no positions)."""
        if self.kind is LayerKind.linear:
            return 0
        return self.qk_rope_head_dim if self.kind is LayerKind.mla else self.heads(heads).head_dim

    def kept_tokens(self, context_len: int) -> int:
        """Tokens of a `context_len`-token sequence this layer's next query can see, so must keep."""
        if self.kind is LayerKind.sliding:
            return min(context_len, self.window)
        if self.kind is LayerKind.chunked:
            return (context_len - 1) % self.chunk + 1
        if self.kind is LayerKind.linear:
            return 0
        return context_len

    def describe(self) -> str:
        """'sliding (window 1024, sinks)': the kind and what sets its cost."""
        bits = []
        if self.window:
            bits.append(f"window {self.window:,}")
        if self.chunk:
            bits.append(f"chunk {self.chunk:,}")
        if self.kind is LayerKind.mla:
            bits.append(f"latent {self.kv_lora_rank} + {self.qk_rope_head_dim}")
            if self.index_head_dim:
                bits.append(f"indexer {self.index_n_heads} x {self.index_head_dim}")
        if self.linear_mixer is LinearMixer.gated_deltanet:
            bits.append(f"state {self.linear_num_value_heads} x {self.linear_key_head_dim} x "
                        f"{self.linear_value_head_dim}")
        elif self.linear_mixer is LinearMixer.mamba1:
            bits.append(f"mamba1, state {self.ssm_inner} x {self.ssm_state}")
        elif self.linear_mixer is LinearMixer.mamba2:
            bits.append(f"mamba2, state {self.ssm_heads} x {self.ssm_head_dim} x {self.ssm_state}")
        if self.sinks:
            bits.append("sinks")
        return self.kind.value + (f" ({', '.join(bits)})" if bits else "")


FULL = LayerType(LayerKind.full)

__all__ = ["FULL", "INDEXER_QUANT_BLOCK", "MLA_SPARSE_FP8_BYTES", "LayerType", "LinearMixer"]
