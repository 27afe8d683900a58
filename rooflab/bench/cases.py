"""The benchmark sweep: which configurations of each kernel `rooflab bench` times.

The sweep covers what the cost model claims to predict: sequence length (prefill),
batch and context (decode), head dim, GQA ratio, causal, page size and split count, an
fp8 (e4m3) KV cache, plus the shapes the performance targets name (RESULTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..specs import AttentionHeads
from ..units import DType
from ..vocab import Kernel, KernelFamily
from .records import Measurement, format_context_lens

LLAMA3_8B = AttentionHeads(32, 8, 128)

#: fp8-KV decode workloads (batch, context length, split count): Llama-3-8B heads, 16-token pages, at
#: the split count recommend_splits picks on h200-sxm (units_per_sm 1.5) for fp16 and fp8 KV alike
#: (tests/test_bench_cpu.py checks that it still does).
FP8_DECODE_WORKLOADS = ((128, 8192, 1), (32, 16384, 1), (8, 8192, 4), (1, 32768, 25))


@dataclass(frozen=True)
class Case:
    """One configuration of one kernel."""

    kernel: Kernel
    dtype: DType
    heads: AttentionHeads = LLAMA3_8B
    batch: int = 1
    seq_len: int = 0
    causal: bool = False
    context_lens: tuple[int, ...] = field(default=())
    page_size: int = 0
    splits: int = 1
    tokens: int = 0
    kv_dtype: DType | None = None

    def measurement(self, impl: str, time_s: float, p10_s: float, p90_s: float, repeats: int,
                    max_rel_err: float) -> Measurement:
        return Measurement(
            kernel=self.kernel, impl=impl, dtype=self.dtype.value,
            kv_dtype=self.kv_dtype.value if self.kv_dtype else "", batch=self.batch,
            num_qo_heads=self.heads.num_qo_heads, num_kv_heads=self.heads.num_kv_heads,
            head_dim=self.heads.head_dim, seq_len=self.seq_len,
            context_lens=format_context_lens(self.context_lens) if self.context_lens else "",
            causal=self.causal, page_size=self.page_size, splits=self.splits, tokens=self.tokens,
            time_s=time_s, time_p10_s=p10_s, time_p90_s=p90_s, repeats=repeats, max_rel_err=max_rel_err,
        )

    def label(self) -> str:
        return self.measurement("", 1.0, 1.0, 1.0, 0, 0.0).describe().replace("/ ", " ")


def prefill_cases(quick: bool = False) -> list[Case]:
    fp16, bf16 = DType.fp16, DType.bf16
    lengths = (1024, 4096) if quick else (1024, 2048, 4096, 8192)
    cases = [Case(Kernel.naive, fp16, seq_len=t) for t in lengths]
    cases += [Case(Kernel.naive_softmax, fp16, seq_len=t) for t in lengths]
    if not quick:
        cases += [Case(Kernel.naive, bf16, seq_len=4096), Case(Kernel.naive, fp16, seq_len=2048, causal=True),
                  Case(Kernel.naive, fp16, seq_len=2048, batch=4)]
    flash_lengths = (1024, 8192) if quick else (512, 1024, 2048, 4096, 8192, 16384)
    cases += [Case(Kernel.flash, fp16, seq_len=t, causal=c) for t in flash_lengths for c in (False, True)]
    if not quick:
        cases += [
            Case(Kernel.flash, bf16, seq_len=8192), Case(Kernel.flash, bf16, seq_len=8192, causal=True),
            Case(Kernel.flash, fp16, heads=AttentionHeads(32, 8, 64), seq_len=4096),
            Case(Kernel.flash, fp16, heads=AttentionHeads(32, 8, 64), seq_len=4096, causal=True),
            Case(Kernel.flash, fp16, heads=AttentionHeads(32, 32, 128), seq_len=4096),
            Case(Kernel.flash, fp16, heads=AttentionHeads(32, 4, 128), seq_len=4096),
            Case(Kernel.flash, fp16, seq_len=1000, batch=4, causal=True),
            Case(Kernel.flash, fp16, seq_len=3000, batch=2),
        ]
    return cases


def decode_cases(quick: bool = False) -> list[Case]:
    fp16 = DType.fp16
    grid = ((1, 8192), (128, 8192)) if quick else \
        ((1, 1024), (1, 8192), (8, 2048), (8, 8192), (32, 4096), (32, 16384), (64, 8192), (128, 1024),
         (128, 8192))
    cases = [Case(Kernel.paged, fp16, batch=b, context_lens=(n,) * b, page_size=16) for b, n in grid]
    if not quick:
        cases += [Case(Kernel.paged, fp16, batch=32, context_lens=(8192,) * 32, page_size=p) for p in (1, 4, 64, 256)]
        ragged = tuple(int(x) for x in (17, 900, 4096, 12000, 250, 7777, 64, 30000) * 4)
        cases += [Case(Kernel.paged, fp16, batch=len(ragged), context_lens=ragged, page_size=16)]
        cases += [Case(Kernel.paged, DType.bf16, batch=64, context_lens=(4096,) * 64, page_size=16)]
    splits = (1, 17) if quick else (1, 2, 4, 8, 17, 32, 64)
    contexts = (32768,) if quick else (8192, 32768, 131072)
    cases += [Case(Kernel.split_kv, fp16, batch=1, context_lens=(n,), page_size=16, splits=s)
              for n in contexts for s in splits]
    if not quick:
        cases += [Case(Kernel.split_kv, fp16, batch=4, context_lens=(16384,) * 4, page_size=16, splits=s)
                  for s in (1, 4, 8)]
        cases += [c for c in fp8_decode_cases() if c.kv_dtype is not None]
    return cases


def fp8_decode_cases() -> list[Case]:
    """Each fp8-KV workload twice, fp16 KV first and fp8 e4m3 KV second (same shape and split count).

    The order matters to `rooflab validate`, which fits on a kernel's even rows and holds out the odd
    ones: on a file of these cases alone, the model is fitted on fp16 KV and tested on fp8 KV.
    """
    out = []
    for batch, length, splits in FP8_DECODE_WORKLOADS:
        kernel = Kernel.paged if splits == 1 else Kernel.split_kv
        for kv in (None, DType.fp8_e4m3):
            out.append(Case(kernel, DType.fp16, batch=batch, context_lens=(length,) * batch, page_size=16,
                            splits=splits, kv_dtype=kv))
    return out


def merge_cases(quick: bool = False) -> list[Case]:
    heads32 = AttentionHeads(32, 32, 128)
    tokens = (4096, 16384) if quick else (1024, 4096, 16384, 65536, 131072)
    cases = [Case(Kernel.merge, DType.bf16, heads=heads32, tokens=n) for n in tokens]
    if not quick:
        cases += [Case(Kernel.merge, DType.fp16, heads=heads32, tokens=16384),
                  Case(Kernel.merge, DType.bf16, heads=AttentionHeads(32, 32, 64), tokens=16384),
                  Case(Kernel.merge, DType.fp32, heads=heads32, tokens=16384)]
    return cases


def sweep(families: tuple[KernelFamily, ...] = tuple(KernelFamily), quick: bool = False) -> list[Case]:
    """The configurations of the requested kernel families (KernelFamily.paged includes split-KV)."""
    families = tuple(KernelFamily(f) for f in families)
    out: list[Case] = []
    if KernelFamily.naive in families or KernelFamily.flash in families:
        out += [c for c in prefill_cases(quick) if c.kernel.family in families]
    if KernelFamily.paged in families:
        out += decode_cases(quick)
    if KernelFamily.merge in families:
        out += merge_cases(quick)
    return out


def second_campaign_cases() -> list[Case]:
    """A campaign of shapes the first does not have: other lengths, head counts, group sizes, head dims 64 /
    128 / 256 (PyTorch's backends where rooflab's kernels do not run), batches, page sizes and split counts.

    Predicting it with constants fitted on the first campaign (`rooflab validate --fit-from`) is the
    out-of-campaign test of the time model.
    """
    fp16, bf16 = DType.fp16, DType.bf16
    h = AttentionHeads
    cases = [Case(Kernel.naive, fp16, seq_len=t) for t in (1536, 3072, 6144)]
    cases += [Case(Kernel.naive, bf16, seq_len=3072, causal=True), Case(Kernel.naive, fp16, heads=h(16, 16, 128),
                                                                         seq_len=4096, batch=2)]
    cases += [Case(Kernel.naive_softmax, fp16, seq_len=t) for t in (1536, 3072, 6144)]
    for d, heads in ((64, h(32, 32, 64)), (128, h(32, 32, 128)), (256, h(32, 32, 256))):
        cases += [Case(Kernel.flash, fp16, heads=heads, seq_len=8192, causal=c) for c in (False, True)]
    cases += [Case(Kernel.flash, fp16, seq_len=t, causal=c) for t in (1536, 6144, 12288, 24576) for c in (False, True)]
    cases += [Case(Kernel.flash, fp16, heads=heads, seq_len=4096, causal=True)
              for heads in (h(64, 8, 128), h(40, 8, 128), h(16, 16, 128), h(8, 1, 128), h(32, 8, 64))]
    cases += [Case(Kernel.flash, fp16, seq_len=2048, batch=8), Case(Kernel.flash, bf16, seq_len=4096, batch=3,
                                                                      causal=True)]
    grid = ((2, 3000), (16, 12000), (48, 6000), (96, 2048), (256, 4096), (4, 65536))
    cases += [Case(Kernel.paged, fp16, batch=b, context_lens=(n,) * b, page_size=16) for b, n in grid]
    cases += [Case(Kernel.paged, fp16, heads=heads, batch=b, context_lens=(n,) * b, page_size=16)
              for heads, b, n in ((h(40, 8, 128), 32, 8192), (h(8, 8, 128), 64, 4096), (h(64, 8, 128), 16, 16384),
                                  (h(32, 8, 64), 64, 8192))]
    cases += [Case(Kernel.paged, fp16, batch=32, context_lens=(8192,) * 32, page_size=p) for p in (8, 32)]
    cases += [Case(Kernel.split_kv, fp16, batch=b, context_lens=(n,) * b, page_size=16, splits=s)
              for b, n, s in ((1, 65536, 32), (1, 12000, 8), (2, 49152, 16), (6, 24576, 4))]
    cases += [Case(Kernel.merge, bf16, heads=h(32, 32, 128), tokens=n) for n in (2048, 32768, 262144)]
    cases += [Case(Kernel.merge, bf16, heads=h(64, 64, 64), tokens=16384)]
    return cases
