"""How precise must the online-softmax state be? Output error against float64, by state precision.

Runs rooflab.numerics.state_precision_error and prints one line per (sequence length, state
precision): the worst and median relative error of the attention output over the rows, and,
for scale, the error of merely storing the exact output in that precision. Deterministic
(seeded); about 2 s with the defaults on a 2-core machine.

    python benchmarks/numerics_error_study.py
    python benchmarks/numerics_error_study.py --logit-std 0.1 --block 16 --format markdown

Source: the chapter "Naive attention and the online softmax", "What has to be fp32".
"""

from __future__ import annotations

import argparse
import time

from rooflab.numerics import state_precision_error
from rooflab.units import DType
from rooflab.render import Format
from rooflab.render_numerics import render_state_errors

SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384, 32768)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-lens", type=int, nargs="+", default=SEQ_LENS, help="Keys per row.")
    parser.add_argument("--rows", type=int, default=16, help="Query rows per sequence length.")
    parser.add_argument("--head-dim", type=int, default=64, help="Width of the value vectors.")
    parser.add_argument("--block", type=int, default=64, help="Keys per block (B_c).")
    parser.add_argument("--logit-std", type=float, default=1.0, help="Standard deviation of the logits.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", type=Format, choices=list(Format), default=Format.table)
    args = parser.parse_args()

    t0 = time.perf_counter()
    rows = state_precision_error(args.seq_lens, (DType.fp16, DType.bf16, DType.fp32), args.rows,
                                 args.head_dim, args.block, args.logit_std, args.seed)
    elapsed_s = time.perf_counter() - t0
    if args.format is Format.table:
        print(f"online softmax-attention, state (m, l, acc) in each precision vs float64: {args.rows} rows, "
              f"head_dim {args.head_dim}, block {args.block}, logits N(0, {args.logit_std}^2), seed {args.seed}")
        print("relative error ||o - o_ref|| / ||o_ref|| per row; 'storing o alone' = rounding the exact output\n")
    print(render_state_errors(rows, args.format), end="")
    if args.format is Format.table:
        print(f"\n{elapsed_s:.1f} s")


if __name__ == "__main__":
    main()
