"""H200 runs for issue 27's cuDNN model: the order cuDNN issues causal query tiles in. With 64-row tiles
(measurements/shapes/h200-cudnn-kernels.csv), a causal launch's work units differ in length; issued heaviest first
the last wave is short, issued in row order (lightest first) the heaviest units finish last. The two orders predict
different times as the number of units (batch x heads x T / 64) varies against the 132 SMs; the non-causal rows
(equal units) are the control.

    python3 benchmarks/h200_cudnn_schedule.py OUT_DIR     (on the H200; CUDA events, median of 10 after 3)

Writes OUT_DIR/h200-cudnn-schedule.csv (impl, d, h, t, b, causal, time_s; '# key: value' metadata lines first):
SDPA's cuDNN back end, fp16, batch 1, d 128 and 256, T 4096 and 16384, heads 1-32, causal and not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h200_cudnn_shapes import run_metadata, smi, timed, write  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def main(out_dir):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    os.makedirs(out_dir, exist_ok=True)
    meta = run_metadata("python3 benchmarks/h200_cudnn_schedule.py $OUT")
    print(meta, flush=True)
    rows = []
    for d in (128, 256):
        for t in (4096, 16384):
            for h in (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32):
                q = torch.randn(1, h, t, d, device="cuda", dtype=torch.float16)
                k, v = torch.randn_like(q), torch.randn_like(q)
                for causal in (False, True):
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        sec = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                    rows.append(dict(impl="sdpa_cudnn", d=d, h=h, t=t, b=1, causal=int(causal), time_s=sec))
                    print("sdpa_cudnn", d, h, t, 1, int(causal), f"{sec * 1e6:.1f} us", flush=True)
                del q, k, v
    meta["clocks_after"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    write(os.path.join(out_dir, "h200-cudnn-schedule.csv"), rows, meta)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
