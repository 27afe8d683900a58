"""Kernel rows (kernels/*.csv): one published attention launch of an exact shape, its FLOPs under the source's
convention, the checks a row must pass, and rooflab's physical floor for its shape."""

from __future__ import annotations

from dataclasses import dataclass

from ..cost.common import Visibility, check_flag, whole_number
from ..cost.flash import flash_prefill
from ..cost.mla import mla_decode
from ..cost.paged import paged_decode_uniform
from ..errors import InputError, SpecError
from ..floors import Ceilings, floor
from ..limits import MAX_BATCH, MAX_PAGE_SIZE, MAX_TOKENS
from ..specs import GpuSpec, LayerType
from ..specs.heads import MAX_HEAD_DIM, MAX_HEADS, AttentionHeads
from ..units import DType
from ..vocab import CeilingSource, LayerKind, Phase
from .cells import _TOKENS, REQUIRED, _bool, _one_of, _positive_number, _text, _whole, _gpu
from .kinds import DEFECT_PREFIX, MAX_SECONDS, MAX_TFLOPS, Convention, Implementation, KernelMetric
from .sources import Source

#: MLA's per-head non-rope q.k width (DeepSeek-V3's 128): a LayerType needs it; the absorbed decode never reads it.
_MLA_NOPE_DIM = 128
_KERNEL_PHASES = (Phase.prefill, Phase.decode)
_HEADS, _DIM = _whole(1, MAX_HEADS), _whole(1, MAX_HEAD_DIM)


def convention_flops(convention: Convention, batch: int, num_qo_heads: int, seq_len_q: int, seq_len_kv: int,
                     head_dim: int, value_dim: int, causal: bool) -> float:
    """The FLOPs a published rate of `convention` counts for one attention launch: 2 B H T_q T_kv (d + d_v), halved
    when causal under `fa` (Convention's docstring cites each). `time` gives no count (InputError). Each size is a
    whole number within a kernel row's bounds (KERNEL_COLUMNS), `causal` True or False, else InputError naming it."""
    convention = Convention.of(convention, "convention")
    if convention is Convention.time:
        raise InputError("convention 'time' gives times, not a FLOP count: a rate needs fa or fa_no_half")
    batch = whole_number(batch, "batch", 1, MAX_BATCH)
    num_qo_heads = whole_number(num_qo_heads, "num_qo_heads", 1, MAX_HEADS)
    seq_len_q = whole_number(seq_len_q, "seq_len_q", 1, MAX_TOKENS)
    seq_len_kv = whole_number(seq_len_kv, "seq_len_kv", 1, MAX_TOKENS)
    head_dim = whole_number(head_dim, "head_dim", 1, MAX_HEAD_DIM)
    value_dim = whole_number(value_dim, "value_dim", 1, MAX_HEAD_DIM)
    causal = check_flag(causal, "causal")
    matmul_flops = 2.0 * batch * num_qo_heads * seq_len_q * seq_len_kv * (head_dim + value_dim)   # QK^T, PV
    return matmul_flops / 2 if (causal and convention is Convention.fa) else matmul_flops


@dataclass(frozen=True)
class KernelRow:
    """One published attention launch: its exact shape, what timed it, and the number as published.

    Shapes at the field: batch B, num_qo_heads H, num_kv_heads H_kv, seq_len_q T_q (query tokens a sequence),
    seq_len_kv T_kv (keys a sequence sees, the context in decode), head_dim d (q and k), head_dim_v d_v
    (v and o; 0 where it equals d), window W (0: full attention), page_size (0: not paged).
    """

    source: str
    gpu: str
    implementation: Implementation
    phase: Phase
    dtype: DType
    batch: int
    num_qo_heads: int
    num_kv_heads: int
    seq_len_q: int
    seq_len_kv: int
    head_dim: int
    head_dim_v: int
    causal: bool
    window: int
    page_size: int
    metric: KernelMetric
    value: float
    note: str
    where: str = ""           # 'file: line n', for messages

    @property
    def value_dim(self) -> int:
        return self.head_dim_v or self.head_dim

    @property
    def heads(self) -> AttentionHeads:
        return AttentionHeads(self.num_qo_heads, self.num_kv_heads, self.head_dim, self.head_dim_v or None)

    @property
    def is_mla_latent(self) -> bool:
        """An absorbed-MLA decode: one KV head whose d = d_c + d_R latent serves as K and its first d_v = d_c
        columns as V (FlashMLA's d 576, d_v 512), so K and V are one tensor, read once."""
        return (self.phase is Phase.decode and self.num_kv_heads == 1 and 0 < self.head_dim_v < self.head_dim)

    @property
    def defect(self) -> str | None:
        """Why the row is a measurement defect (the note after 'defect:'), or None for a sound row."""
        return self.note[len(DEFECT_PREFIX):].strip() if self.note.startswith(DEFECT_PREFIX) else None

    def flops(self, convention: Convention) -> float:
        """The FLOPs the source's rate counts: 2 B H T_q T_kv (d + d_v), halved when causal under `fa`.

        (4 B H T^2 d of the FlashAttention papers when d_v = d and T_q = T_kv; Convention's docstring cites each.)
        """
        if convention is Convention.time:
            raise SpecError(self.where, "metric", self.metric.value, "the source's convention is 'time': "
                                                                     "it gives no FLOP count")
        return convention_flops(convention, self.batch, self.num_qo_heads, self.seq_len_q, self.seq_len_kv,
                                self.head_dim, self.value_dim, self.causal)

    def time_s(self, convention: Convention) -> float:
        """The launch's time in seconds: the value itself, or the convention's FLOPs over the rate."""
        if self.metric is KernelMetric.time_s:
            return self.value
        return self.flops(convention) / (self.value * 1e12)


#: Each column's reader, and the value an empty optional cell reads as (REQUIRED: it may not be empty).
KERNEL_COLUMNS = {
    "source": (_text, REQUIRED), "gpu": (_gpu, REQUIRED), "implementation": (_one_of(Implementation), REQUIRED),
    "phase": (_one_of(_KERNEL_PHASES), REQUIRED), "dtype": (_one_of(DType), REQUIRED),
    "batch": (_whole(1, MAX_BATCH), REQUIRED), "num_qo_heads": (_HEADS, REQUIRED),
    "num_kv_heads": (_HEADS, REQUIRED), "seq_len_q": (_TOKENS, REQUIRED), "seq_len_kv": (_TOKENS, REQUIRED),
    "head_dim": (_DIM, REQUIRED), "head_dim_v": (_DIM, 0), "causal": (_bool, REQUIRED),
    "window": (_TOKENS, 0), "page_size": (_whole(1, MAX_PAGE_SIZE), 0),
    "metric": (_one_of(KernelMetric), REQUIRED), "value": (_positive_number(1e12), REQUIRED),
    "note": (_text, ""),
}


def _check_kernel(row: KernelRow, source: Source) -> None:
    at = row.where
    if row.num_qo_heads % row.num_kv_heads:
        raise SpecError(at, "num_kv_heads", row.num_kv_heads,
                        f"must divide num_qo_heads ({row.num_qo_heads})")
    if row.seq_len_q > row.seq_len_kv and row.causal:
        raise SpecError(at, "seq_len_q", row.seq_len_q, f"a causal row's queries are the last of its "
                                                        f"{row.seq_len_kv} keys: at most seq_len_kv")
    if row.phase is Phase.decode and not row.page_size and row.implementation is Implementation.flashmla:
        raise SpecError(at, "page_size", "", "FlashMLA reads a paged cache: give its page size")
    if row.metric is KernelMetric.tflops:
        if source.convention not in (Convention.fa, Convention.fa_no_half):
            raise SpecError(at, "metric", row.metric.value, f"a rate needs a FLOP convention; source "
                                                            f"'{source.id}' has {source.convention}")
        if row.window:
            raise SpecError(at, "window", row.window, "no source's FLOP convention counts a window; give time_s")
        if row.value > MAX_TFLOPS:
            raise SpecError(at, "value", row.value, f"above {MAX_TFLOPS:g} TFLOP/s, more than any GPU")
    elif row.value > MAX_SECONDS:
        raise SpecError(at, "value", row.value, f"longer than {MAX_SECONDS:g} s")


def kernel_floor_s(row: KernelRow, gpu: GpuSpec, ceilings: CeilingSource | None = None) -> float:
    """rooflab's physical floor for the row's shape on `gpu`, in seconds: the roofline of the cost rooflab
    prices the shape with (floors.floor), as `rooflab report` floors a layer.

    An absorbed-MLA decode (is_mla_latent) is cost/mla.py's mla_decode over a latent of d = d_c + d_R, read once.
    A prefill of T_q = T_kv is a FlashAttention forward (cost/flash.py flash_prefill, a window as a Visibility);
    a decode, or a prefill of fewer queries than keys (an append), is a paged decode of T_q new tokens a sequence
    over T_kv keys (cost/paged.py paged_decode, one page a token where the row is not paged, no KV split).
    No parallelism model: a floor assumes every SM busy. `ceilings` None: the roofs Ceilings.of takes by default
    (the GPU's floor roofs).
    """
    visibility = Visibility(row.window or None)
    if row.is_mla_latent:
        layer = LayerType(kind=LayerKind.mla, kv_lora_rank=row.head_dim_v, qk_rope_head_dim=row.head_dim - row.head_dim_v,
                          qk_nope_head_dim=_MLA_NOPE_DIM)
        cost = mla_decode(layer, row.num_qo_heads, [row.seq_len_kv] * row.batch, row.page_size or 64, row.dtype,
                          q_len=row.seq_len_q)
    elif row.phase is Phase.prefill and row.seq_len_q == row.seq_len_kv:
        cost = flash_prefill(row.heads, row.seq_len_q, row.batch, row.dtype, row.causal, gpu=gpu,
                             visibility=visibility)
    else:
        cost = paged_decode_uniform(row.heads, row.seq_len_kv, row.batch, row.page_size or 1, row.dtype,
                                    q_len=row.seq_len_q, visibility=visibility)
    roofs = Ceilings.of(gpu, row.dtype) if ceilings is None else Ceilings.of(gpu, row.dtype, ceilings)
    return float(floor(cost, roofs).t_floor_s)


__all__ = ["KERNEL_COLUMNS", "KernelRow", "convention_flops", "kernel_floor_s"]
