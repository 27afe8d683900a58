"""Context-parallel prefill over N GPUs: ring attention (pass-KV) and, beside it, Ulysses (all-to-all by heads).

Ring (pass-KV; Liu et al., "Ring Attention with Blockwise Transformers"; Meta's "Context Parallelism for
Scalable Million-Token Inference" for inference): each rank holds T / N tokens of Q, K and V. In each of N
steps it runs attention of its queries against the KV block it holds, passes that block to the next rank
and receives the previous rank's (send/recv, overlapped with the attention), and merges the step's
(o, lse) into its running state (the LSE merge). Causal prefill balances the work by giving each rank two
chunks (i and 2N - 1 - i, "zigzag"), so every step computes about half a block of pairs:

    per step   pairs  c (T / N)^2 per head        c = 1 non-causal, 1/2 causal (balanced)
               FLOPs  2 h (d + d_v) c (T / N)^2   KV sent  (T / N) h_kv (d + d_v) b   (send_recv)
    a rank     t = sum over the first N - 1 steps of max(t_attention, t_transfer) + t_attention + (N - 1) t_merge

    overlap    the transfer hides under the attention when t_attention >= t_transfer, that is when
               T / N >= h_kv (d + d_v) b R / (2 c h (d + d_v) W) = h_kv b R / (2 c h W)
               (R: the attention's FLOP rate, W: the send/recv bandwidth): tokens per GPU above which the
               communication is free. Llama-3 (32 / 8 heads, fp16) at R = 600 TFLOP/s, W = 340 GB/s: 441
               tokens non-causal, 882 causal.

Ulysses (DeepSpeed-Ulysses): an all-to-all turns the T / N tokens x h heads each rank holds into T tokens x
h / N heads, attention runs on whole sequences, and a second all-to-all turns the output back. Its
limit: the KV heads must divide among the ranks (h_kv >= N and a multiple), else KV heads are
replicated and the all-to-all carries more.

    all-to-all before   Q (T / N) h d b + K, V (T / N) h_kv (d + d_v) b per rank
    all-to-all after    O (T / N) h d_v b per rank
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..limits import MAX_BATCH, MAX_GPUS, MAX_TOKENS
from ..specs import AttentionHeads, GpuSpec
from ..units import DType
from .common import check_flag, real_number, whole_number
from .flash import FlashCost, flash_prefill
from .merge import MergeCost, merge_pair


def check_cp(world_size: int, seq_len: int, option: str = "--cp") -> int:
    n = whole_number(world_size, f"{option} (GPUs the sequence is split over)", maximum=MAX_GPUS)
    if n > 1 and seq_len < 2 * n:
        raise InputError(f"{option} {n}: a {seq_len:,}-token prompt cannot give each of {n} GPUs two chunks")
    return n


@dataclass(frozen=True)
class RingPrefill:
    """One layer's ring-attention prefill on one rank."""

    world_size: int
    causal: bool
    tokens_per_gpu: float
    step: FlashCost                  # attention of the rank's queries against one KV block
    step_pair_share: float           # c: 1 non-causal, 1/2 causal (balanced)
    kv_bytes_per_step: float         # the block sent to the next rank each step (what send/recv carries)
    merge: MergeCost                 # one step's LSE merge into the running state
    heads: AttentionHeads | None = None
    batch: int = 1

    @property
    def steps(self) -> int:
        return self.world_size

    @property
    def flops(self) -> float:
        return float(self.step.flops) * self.step_pair_share * self.world_size


def ring_prefill(heads: AttentionHeads, seq_len: int, world_size: int, batch: int = 1, dtype: DType = DType.fp16,
                 causal: bool = True, gpu: GpuSpec | None = None) -> RingPrefill:
    """Ring attention of `batch` prompts of `seq_len` tokens over `world_size` ranks (module docstring)."""
    seq_len = whole_number(seq_len, "seq_len", maximum=MAX_TOKENS)
    n = check_cp(world_size, seq_len)
    batch = whole_number(batch, "batch", maximum=MAX_BATCH)
    dtype = DType.of(dtype)
    causal = check_flag(causal, "causal")
    local = seq_len / n
    step = flash_prefill(heads, local, batch, dtype, causal=False, gpu=gpu)     # one full block of pairs
    kv = batch * local * heads.kv_bytes_per_token(dtype)
    merge = merge_pair(batch * local, heads.num_qo_heads, heads.value_dim, dtype, write_lse=True)
    return RingPrefill(n, causal, local, step, 0.5 if causal else 1.0, float(kv), merge, heads, batch)


def overlap_tokens(heads: AttentionHeads, dtype: DType, attention_flop_per_s: float, link_bytes_per_s: float,
                   causal: bool = True) -> float:
    """Tokens per GPU above which a ring step's KV transfer hides under its attention: h_kv b R / (2 c h W)."""
    attention_flop_per_s = real_number(attention_flop_per_s, "attention_flop_per_s", 0, 1e21, lo_open=True)
    link_bytes_per_s = real_number(link_bytes_per_s, "link_bytes_per_s", 0, 1e18, lo_open=True)
    causal = check_flag(causal, "causal")
    c = 0.5 if causal else 1.0
    per_token_bytes = heads.kv_bytes_per_token(DType.of(dtype))               # h_kv (d + d_v) b
    per_pair_flops = 2 * heads.num_qo_heads * (heads.head_dim + heads.value_dim)
    return per_token_bytes * attention_flop_per_s / (c * per_pair_flops * link_bytes_per_s)


@dataclass(frozen=True)
class Ulysses:
    """One layer's Ulysses prefill on one rank: the two all-to-alls and the attention on h / N heads."""

    world_size: int
    attention: FlashCost
    a2a_in_bytes_per_rank: float
    a2a_out_bytes_per_rank: float


def ulysses_prefill(heads: AttentionHeads, seq_len: int, world_size: int, batch: int = 1,
                    dtype: DType = DType.fp16, causal: bool = True, gpu: GpuSpec | None = None) -> Ulysses:
    """Ulysses over `world_size` ranks; an InputError where the KV heads do not divide among the ranks."""
    seq_len = whole_number(seq_len, "seq_len", maximum=MAX_TOKENS)
    n = check_cp(world_size, seq_len)
    batch = whole_number(batch, "batch", maximum=MAX_BATCH)
    dtype = DType.of(dtype)
    causal = check_flag(causal, "causal")
    if heads.num_kv_heads % n or heads.num_qo_heads % n:
        raise InputError(f"Ulysses over {n} GPUs needs the {heads.num_kv_heads} KV heads (and "
                         f"{heads.num_qo_heads} query heads) to divide among them (h_kv >= N, a multiple); "
                         f"use ring attention (pass-KV) instead")
    local = batch * seq_len / n
    shard = AttentionHeads(heads.num_qo_heads // n, heads.num_kv_heads // n, heads.head_dim, heads.v_head_dim)
    attention = flash_prefill(shard, seq_len, batch, dtype, causal, gpu=gpu)
    a2a_in = local * (heads.num_qo_heads * heads.head_dim * dtype.bytes + heads.kv_bytes_per_token(dtype))
    a2a_out = local * heads.num_qo_heads * heads.value_dim * dtype.bytes
    return Ulysses(n, attention, float(a2a_in), float(a2a_out))


__all__ = ["RingPrefill", "Ulysses", "check_cp", "overlap_tokens", "ring_prefill", "ulysses_prefill"]
