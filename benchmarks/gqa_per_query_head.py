"""Does the L2 save a GQA group's repeated KV reads when every query head's CTA reads its KV head itself?

TensorRT-LLM's masked multi-head attention kernel (decoderMaskedMultiheadAttentionTemplate.h: one CTA per query
head hi and sequence, reading KV head hi / qhead_per_kv) reads each KV head once per query head of its group; the
CTAs of one group are launched side by side. rooflab's paged decode kernel reads a KV head once for its whole group.
This times, on one GPU, with rooflab's own paged decode kernel (1 split, L2 flushed before each repeat):

    gqa       B sequences, h query heads over h_kv KV heads (the group shares each page read)
    distinct  g B sequences of h_kv heads, one query head a KV head (group 1), every sequence its own pages:
              the group's KV read g times from distinct memory (the no-reuse bound)
    aliased   the same g B sequences, each g consecutive ones sharing one block-table row (the same pages): each
              page read by g CTAs in flight together, as the masked MHA kernel's group reads its KV head

If aliased ~ distinct, the L2 does not save the group's repeated reads at these shapes; if aliased ~ gqa, it does.

    python3 benchmarks/gqa_per_query_head.py -o h200-gqa-per-query-head.csv    # on a GPU machine
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.kernels.decode import paged_decode  # noqa: E402
from rooflab.kernels.testing import make_paged_cache, random_normal  # noqa: E402
from rooflab.measure.timing import L2Flusher, time_gpu  # noqa: E402

#: (batch, context, query heads, KV heads, head dim, KV dtype): Mistral-7B's and Mixtral's TP 2 shapes at the
#: TensorRT-LLM 0.9 rows' mid contexts (128 + 1024, 2048 + 64, 2048 + 1024), fp8 and fp16 caches.
CASES = [(120, 1152, 32, 8, 128, "fp8_e4m3"), (64, 2112, 32, 8, 128, "fp8_e4m3"), (56, 3072, 32, 8, 128, "fp8_e4m3"),
         (64, 3072, 16, 4, 128, "fp8_e4m3"), (120, 1152, 32, 8, 128, "fp16"), (56, 3072, 32, 8, 128, "fp16")]


def kv_bytes(batch: int, context: int, kv_heads: int, head_dim: int, fp8: bool) -> float:
    return 2.0 * batch * context * kv_heads * head_dim * (1 if fp8 else 2)


def measure(case, flush, repeats: int) -> dict:
    import cupy

    batch, context, heads, kv_heads, head_dim, kv = case
    group = heads // kv_heads
    rng = cupy.random.default_rng(1)
    out = {}
    gqa = make_paged_cache([context] * batch, kv_heads, head_dim, 16, kv, seed=1)
    q = random_normal((batch, heads, head_dim), "fp16", rng)
    out["gqa"] = time_gpu(lambda: paged_decode(q, gqa.k_cache, gqa.v_cache, gqa.block_table, gqa.context_lens,
                                               **gqa.scales), 3, repeats, flush).median_s
    qg = random_normal((group * batch, kv_heads, head_dim), "fp16", rng)
    table = cupy.asarray(np.repeat(cupy.asnumpy(gqa.block_table), group, axis=0))
    lens = cupy.asarray(np.repeat(cupy.asnumpy(gqa.context_lens), group))
    out["aliased"] = time_gpu(lambda: paged_decode(qg, gqa.k_cache, gqa.v_cache, table, lens, **gqa.scales),
                              3, repeats, flush).median_s
    del gqa, table, lens
    cupy.get_default_memory_pool().free_all_blocks()
    dist = make_paged_cache([context] * (group * batch), kv_heads, head_dim, 16, kv, seed=2)
    out["distinct"] = time_gpu(lambda: paged_decode(qg, dist.k_cache, dist.v_cache, dist.block_table,
                                                    dist.context_lens, **dist.scales), 3, repeats, flush).median_s
    del dist
    cupy.get_default_memory_pool().free_all_blocks()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", default="h200-gqa-per-query-head.csv")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    flush = L2Flusher()
    rows = []
    print(f"{'case':>34s} {'gqa us':>9s} {'aliased us':>11s} {'distinct us':>12s} {'alias/dist':>10s} "
          f"{'alias/gqa':>9s} {'gqa TB/s':>9s} {'dist TB/s':>9s}")
    for case in CASES:
        t = measure(case, flush, args.repeats)
        batch, context, heads, kv_heads, head_dim, kv = case
        group = heads // kv_heads
        nbytes = kv_bytes(batch, context, kv_heads, head_dim, kv != "fp16")
        rows.append(dict(batch=batch, context=context, heads=heads, kv_heads=kv_heads, head_dim=head_dim, kv_dtype=kv,
                         gqa_s=t["gqa"], aliased_s=t["aliased"], distinct_s=t["distinct"], kv_bytes=nbytes,
                         repeats=args.repeats))
        label = f"B {batch} x {context}, {heads}/{kv_heads} heads, {kv}"
        print(f"{label:>34s} {t['gqa'] * 1e6:9.1f} {t['aliased'] * 1e6:11.1f} {t['distinct'] * 1e6:12.1f} "
              f"{t['aliased'] / t['distinct']:10.3f} {t['aliased'] / t['gqa']:9.2f} {nbytes / t['gqa'] / 1e12:9.2f} "
              f"{group * nbytes / t['distinct'] / 1e12:9.2f}")
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
