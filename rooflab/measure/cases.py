"""The benchmark sweep: which configurations of each kernel `rooflab bench` times.

The sweep covers what the cost model claims to predict: sequence length (prefill),
batch and context (decode), head dim, GQA ratio, causal, page size and split count, an
fp8 (e4m3) KV cache, plus the shapes the performance targets name (RESULTS.md).
new_kernel_cases() adds the attention variants' kernels (windows, chunks and sinks; several new
tokens a sequence; MLA decode) for `rooflab bench --new-kernels`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kernels.mla import MLA_LATENT_DIM, MLA_PAGE_SIZE, MLA_VALUE_DIM
from ..specs import AttentionHeads
from ..units import DType
from ..vocab import Kernel, KernelFamily
from ..fit.records import Measurement, format_context_lens

LLAMA3_8B = AttentionHeads(32, 8, 128)

#: fp8-KV decode workloads (batch, context length, split count): Llama-3-8B heads, 16-token pages, at
#: the split count recommend_splits picks on h200-sxm (units_per_sm 1.5) for fp16 and fp8 KV alike
#: (tests/bench/test_cases.py checks that it still does).
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
    q_len: int = 1                 # new tokens a sequence (decode)
    window: int = 0                # sliding window W (0: none)
    chunk: int = 0                 # chunk C (0: none)
    sinks: bool = False            # one learned logit a query head in the softmax denominator

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
            v_head_dim=self.heads.v_head_dim or 0, q_len=self.q_len, window=self.window, chunk=self.chunk,
            sinks=self.sinks,
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


def mla_heads(num_qo_heads: int) -> AttentionHeads:
    """MLA decode's heads in the absorbed form: every query head attends over one shared latent of 576 = 512 + 64
    rope elements and takes its first 512 as values (the kernel's, DeepSeek-V3's)."""
    return AttentionHeads(num_qo_heads, 1, MLA_LATENT_DIM, MLA_VALUE_DIM)


def window_prefill_cases() -> list[Case]:
    """Flash prefill with a sliding window (W 1024 / 4096), chunks (C 8192) and sinks, T 8k..32k, Llama-3-8B heads."""
    fp16 = DType.fp16
    cases = [Case(Kernel.flash_window, fp16, seq_len=t, causal=True, window=w)
             for t in (8192, 16384, 32768) for w in (1024, 4096)]
    cases += [Case(Kernel.flash_window, fp16, seq_len=t, causal=True, window=w, sinks=True)
              for t, w in ((8192, 4096), (16384, 1024), (32768, 4096))]
    cases += [Case(Kernel.flash_window, fp16, seq_len=16384, causal=True, chunk=8192),
              Case(Kernel.flash_window, fp16, seq_len=32768, causal=True, chunk=8192),
              Case(Kernel.flash_window, fp16, seq_len=32768, causal=True, chunk=8192, sinks=True),
              Case(Kernel.flash_window, DType.bf16, seq_len=8192, batch=2, causal=True, window=4096)]
    return cases


def window_decode_cases() -> list[Case]:
    """Paged decode reading only a window's pages (W 128 / 4096; a chunk; sinks; split-KV), batch 16..64,
    ctx 8k..32k."""
    fp16 = DType.fp16
    cases = [Case(Kernel.paged_window, fp16, batch=b, context_lens=(n,) * b, page_size=16, window=w)
             for b in (16, 64) for n in (8192, 32768) for w in (128, 4096)]
    cases += [Case(Kernel.paged_window, fp16, batch=32, context_lens=(16384,) * 32, page_size=16, window=4096,
                   sinks=True),
              Case(Kernel.paged_window, fp16, batch=16, context_lens=(32768,) * 16, page_size=16, window=4096,
                   splits=2),
              Case(Kernel.paged_window, fp16, batch=32, context_lens=(12000,) * 32, page_size=16, chunk=8192),
              Case(Kernel.paged_window, DType.bf16, batch=32, context_lens=(16384,) * 32, page_size=16, window=1024,
                   sinks=True)]
    return cases


def multi_token_cases() -> list[Case]:
    """Paged decode with q_len 2 / 4 / 8 new tokens a sequence, batch 32..128, ctx 4k..8k; fp16 and fp8 e4m3 caches
    (the fp8 rows last, so validate's alternate-row fit holds half of them out)."""
    fp16, fp8 = DType.fp16, DType.fp8_e4m3
    grid = ((32, 8192), (128, 4096), (128, 8192))
    cases = [Case(Kernel.paged_multi, fp16, batch=b, context_lens=(n,) * b, page_size=16, q_len=q)
             for b, n in grid for q in (2, 4, 8)]
    cases += [Case(Kernel.paged_multi, fp16, batch=b, context_lens=(n,) * b, page_size=16, q_len=q, kv_dtype=fp8)
              for b, n in ((32, 4096), (128, 8192)) for q in (2, 8)]
    return cases


def mla_cases() -> list[Case]:
    """MLA decode over a paged latent cache (pages of 64), h 16 (memory-bound) and 128 (compute-bound), q_len 1..2,
    batch 32..128, ctx 4k..8k, bf16 and fp8 e4m3 latents; two split-KV rows.

    On sm_90 the launcher runs the wgmma kernel for a 16-bit latent and >= 64 query rows (h 128 bf16 here) and
    the mma.sync kernel otherwise, so the bench records two implementations (ours.impl_name), each fitted alone.
    """
    bf16, fp8 = DType.bf16, DType.fp8_e4m3
    cases = []
    for h, grid in ((16, ((32, 4096), (128, 8192))), (128, ((32, 4096), (64, 8192), (128, 8192)))):
        cases += [Case(Kernel.mla_decode, bf16, heads=mla_heads(h), batch=b, context_lens=(n,) * b,
                       page_size=MLA_PAGE_SIZE, q_len=q, kv_dtype=kv)
                  for b, n in grid for q in (1, 2) for kv in (None, fp8)]
    cases += [Case(Kernel.mla_decode, bf16, heads=mla_heads(h), batch=32, context_lens=(4096,) * 32,
                   page_size=MLA_PAGE_SIZE, splits=s) for h, s in ((16, 4), (128, 2))]
    return cases


def new_kernel_cases(quick: bool = False) -> list[Case]:
    """The attention variants' kernels for `rooflab bench --new-kernels`: windowed and chunked flash prefill (with
    and without sinks), windowed paged decode, multi-token paged decode and MLA decode; with `quick`, two of each
    (a smoke test). KERNELS.md ("Attention variants") has the kernels; tests/bench/test_cases.py keeps the
    sweep's time, estimated from its floors, under its budget.
    """
    groups = (window_prefill_cases(), window_decode_cases(), multi_token_cases(), mla_cases())
    if quick:
        return [c for g in groups for c in (g[0], g[-1])]
    return [c for g in groups for c in g]


#: The gap campaign's prefill shapes (batch, T): several short sequences, 1 to 32 of 256 to 4096 tokens.
GAP_PREFILL_SHAPES = ((1, 256), (1, 1024), (1, 4096), (2, 2048), (3, 4096), (4, 1024), (4, 3072), (8, 512),
                      (8, 2048), (12, 1536), (16, 256), (16, 1024), (32, 256), (32, 512))
#: Its decode shapes without splits (batch, context): one or a few long sequences, mid batches of short ones.
GAP_DECODE_SHAPES = ((1, 1024), (1, 8192), (1, 32768), (1, 131072), (2, 16384), (2, 65536), (4, 4096), (4, 32768),
                     (8, 1024), (8, 16384), (12, 8192), (16, 2048), (16, 8192), (16, 32768), (24, 4096), (32, 1024),
                     (32, 8192), (48, 2048), (48, 16384), (64, 1024), (64, 4096), (64, 32768))
#: Its split-KV workloads (batch, context, splits): from 2 splits up to the count recommend_splits picks on the H200
#: (units_per_sm 1.5; tests/bench/test_cases.py checks that it still does).
GAP_SPLIT_WORKLOADS = ((1, 32768, (2, 6, 12, 25)), (1, 131072, (2, 8, 25)), (2, 65536, (2, 6, 13)),
                       (4, 32768, (2, 4, 7)), (8, 16384, (2, 4)), (16, 8192, (2,)), (16, 32768, (2,)))


def gap_campaign_cases() -> list[Case]:
    """The regimes the fits miss (`rooflab bench --gap-campaign`): causal and non-causal prefill of batches of 1 to
    32 short sequences (T 256..4096) at d 128 and 64, GQA 4 and 8; paged decode at batch 1..64 over 1k..128k
    without splits; split-KV from 2 splits to the recommended count at those batches.

    Fitted on alternate rows with the other campaigns, and predicted from their fit alone, it is the test of
    the short-prefill and low-parallelism-decode models (RESULTS.md, session 7).
    """
    fp16, h = DType.fp16, AttentionHeads
    cases = [Case(Kernel.flash, fp16, seq_len=t, batch=b, causal=c) for b, t in GAP_PREFILL_SHAPES
             for c in (True, False)]
    cases += [Case(Kernel.flash, fp16, heads=h(64, 8, 128), seq_len=t, batch=b, causal=c)
              for b, t in ((1, 2048), (4, 1024), (8, 2048), (16, 512)) for c in (True, False)]
    cases += [Case(Kernel.flash, fp16, heads=heads, seq_len=t, batch=b, causal=c)
              for heads in (h(32, 8, 64), h(16, 2, 64)) for b, t in ((1, 1024), (4, 2048), (8, 512), (16, 1024))
              for c in (True, False)]
    cases += [Case(Kernel.paged, fp16, batch=b, context_lens=(n,) * b, page_size=16) for b, n in GAP_DECODE_SHAPES]
    cases += [Case(Kernel.paged, fp16, heads=h(64, 8, 128), batch=b, context_lens=(n,) * b, page_size=16)
              for b, n in ((1, 32768), (8, 8192), (32, 2048))]
    cases += [Case(Kernel.split_kv, fp16, batch=b, context_lens=(n,) * b, page_size=16, splits=s)
              for b, n, splits in GAP_SPLIT_WORKLOADS for s in splits]
    return cases


def mla_sweep_cases() -> list[Case]:
    """MLA decode across 16..128 heads, q_len 1..4, bf16 and fp8 e4m3 latents, at 32 x 4096 and 100 x 4096
    (`rooflab bench --mla-sweep`): the mma.sync kernel's rows at every row-tile count (16, 32, 64 rows a CTA) and
    wave count, beside the wgmma kernel's where it runs (16-bit latents, >= 64 rows)."""
    bf16, fp8 = DType.bf16, DType.fp8_e4m3
    return [Case(Kernel.mla_decode, bf16, heads=mla_heads(h), batch=b, context_lens=(n,) * b,
                 page_size=MLA_PAGE_SIZE, q_len=q, kv_dtype=kv)
            for b, n in ((32, 4096), (100, 4096)) for h in (16, 32, 64, 128) for q in (1, 2, 3, 4)
            for kv in (None, fp8)]
