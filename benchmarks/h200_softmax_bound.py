"""Is torch.softmax over the last dim bound by HBM or by the SMs on the H200? (issue 27, eager rows)

    python3 benchmarks/h200_softmax_bound.py OUT.csv      (on the H200; CUDA events, median of 10 after 3)

The same rows (B x H x T rows of T) in fp16 and in fp32: a bandwidth-bound kernel takes twice as long on fp32 (twice
the bytes, the same exps and reductions); an SM-bound one (row reductions, one block a row) about as long. Rows of
2^28 to 2^32 elements, T 512 to 8192.
"""
import csv
import sys

import torch


def timed(fn, reps=10, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1e-3)
    out.sort()
    return out[len(out) // 2]


def main(path):
    rows = []
    print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    for t in (512, 1024, 2048, 4096, 8192):
        for elements in (2 ** 28, 2 ** 30, 2 ** 31):
            n = elements // t
            for dt in (torch.float16, torch.float32):
                s = torch.randn(n, t, device="cuda", dtype=dt) * 3
                sec = timed(lambda: torch.softmax(s, dim=-1))
                copy = timed(lambda: s.clone())
                nbytes = 2 * s.numel() * s.element_size()
                rows.append(dict(t=t, rows=n, dtype=str(dt).split(".")[1], softmax_s=sec, clone_s=copy,
                                 bytes=nbytes))
                print(t, n, dt, f"softmax {sec * 1e6:.1f} us {nbytes / sec / 1e12:.2f} TB/s; clone "
                      f"{copy * 1e6:.1f} us {nbytes / copy / 1e12:.2f} TB/s", flush=True)
                del s
                torch.cuda.empty_cache()
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1])
