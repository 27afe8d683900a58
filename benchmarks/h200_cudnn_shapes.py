"""H200 runs for issue 27's cuDNN model (rooflab/fit/shapes_fit.py): SDPA's cuDNN back end at more head dims and
token counts than the published rows' shapes, the cuDNN kernel each (d, causal) launches (its name, from the
PyTorch profiler), and the eager softmax timed again, interleaved, for its run-to-run spread.

    python3 benchmarks/h200_cudnn_shapes.py OUT_DIR        (on the H200; CUDA events, median of 10 after 3)

Writes OUT_DIR/h200-cudnn-shapes.csv (impl, d, h, t, b, causal, time_s; '# key: value' metadata lines first),
OUT_DIR/h200-cudnn-kernels.csv (d, h, t, b, causal, kernel, calls) and OUT_DIR/h200-softmax-repeat.csv.
Shapes: batch x T = 16384 tokens (the published sweep's) at d 32, 64, 96, 128, 160, 192, 256 with
h = 2048 // d heads, and 32768 tokens at d 128 and 256; fp16, T 512 to 16384, causal and not.
"""
import csv
import datetime
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h200_softmax_bound import timed  # noqa: E402  (one per-call synchronised loop for the H200 shapes scripts)


def smi(query):
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.strip()
    except Exception as e:      # noqa: BLE001 - metadata only
        return f"unavailable ({e!r})"


def kernels_of(fn):
    """The CUDA kernels one call of fn launches: {name: calls}."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        if e.device_type is not None and "CUDA" in str(e.device_type) and e.count:
            out[e.key] = e.count
    return out


def run_metadata(command):
    """The '# key: value' lines every H200 shapes CSV starts with: when, where, which libraries, how timed."""
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "gpu": torch.cuda.get_device_name(), "driver": smi("driver_version"),
            "clocks_before": smi("clocks.sm,clocks.mem,temperature.gpu,power.draw"),
            "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "command": command,
            "timing": "CUDA events around one call, median of 10 after 3 warm-ups; fp16; SDPA cuDNN back end"}


def write(path, rows, meta=None):
    with open(path, "w", newline="") as f:
        for k, v in (meta or {}).items():
            f.write(f"# {k}: {v}\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(out_dir):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    os.makedirs(out_dir, exist_ok=True)
    meta = run_metadata("python3 benchmarks/h200_cudnn_shapes.py $OUT")
    print(meta, flush=True)
    dt = torch.float16
    rows, names = [], []
    shapes = [(d, 2048 // d, 16384) for d in (32, 64, 96, 128, 160, 192, 256)] + \
             [(d, 2048 // d, 32768) for d in (128, 256)]
    for d, h, tokens in shapes:
        for t in (512, 1024, 2048, 4096, 8192, 16384):
            b = tokens // t
            q = torch.randn(b, h, t, d, device="cuda", dtype=dt)
            k, v = torch.randn_like(q), torch.randn_like(q)
            for causal in (False, True):
                fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
                try:
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        sec = timed(fn)
                        if t == 2048 or (tokens == 16384 and t in (512, 16384)):
                            for name, calls in kernels_of(fn).items():
                                names.append(dict(d=d, h=h, t=t, b=b, causal=int(causal), kernel=name, calls=calls))
                except Exception as e:  # noqa: BLE001 - a shape the back end refuses
                    print("sdpa_cudnn refused", d, h, t, b, causal, repr(e)[:120], flush=True)
                    continue
                rows.append(dict(impl="sdpa_cudnn", d=d, h=h, t=t, b=b, causal=int(causal), time_s=sec))
                print("sdpa_cudnn", d, h, t, b, int(causal), f"{sec * 1e6:.1f} us", flush=True)
            del q, k, v
            torch.cuda.empty_cache()
    meta["clocks_after"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    write(os.path.join(out_dir, "h200-cudnn-shapes.csv"), rows, meta)
    write(os.path.join(out_dir, "h200-cudnn-kernels.csv"), names, {k: meta[k] for k in ("date", "gpu", "torch", "cudnn")})
    # the eager softmax of attention_pytorch (B x H x T x T fp16, last dim), three rounds interleaved
    soft = []
    for rnd in range(3):
        for d, t in ((64, 2048), (64, 4096), (64, 8192), (128, 8192)):
            h, b = 2048 // d, 16384 // t
            s = torch.randn(b, h, t, t, device="cuda", dtype=dt)
            sec = timed(lambda: torch.softmax(s, dim=-1))
            soft.append(dict(round=rnd, d=d, h=h, t=t, b=b, softmax_s=sec, sm_clock=smi("clocks.sm")))
            print("softmax", rnd, d, t, f"{sec * 1e3:.3f} ms", soft[-1]["sm_clock"], flush=True)
            del s
            torch.cuda.empty_cache()
    write(os.path.join(out_dir, "h200-softmax-repeat.csv"), soft, {k: meta[k] for k in ("date", "gpu", "torch")})
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
