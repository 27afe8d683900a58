"""H200 timings at the published kernel rows' shapes (issue 27): eager attention as the FlashAttention benchmark
writes it, its launches one at a time, rooflab's torch peer, and SDPA's cuDNN and flash back ends.

    python3 benchmarks/h200_published_shapes.py OUT.csv        (on the H200; CUDA events, median of 10 after 3)

attention_pytorch below is flash-attention's benchmarks/benchmark_flash_attention.py `attention_pytorch` (baddbmm
with alpha = 1/sqrt(d) into a preallocated S, a float32 triu mask built and added when causal, softmax, dropout
p = 0 (a no-op: ATen's _dropout_impl returns its input when p == 0), einsum with V). Shapes: the FlashAttention
papers' sweep, batch x seqlen = 16384, hidden 2048 (d 64, 128, 256).
"""
import csv
import math
import sys

import torch
import torch.nn.functional as F
from einops import rearrange


def attention_pytorch(qkv, causal):
    batch_size, seqlen, _, nheads, d = qkv.shape
    q, k, v = qkv.unbind(dim=2)
    q = rearrange(q, 'b t h d -> (b h) t d')
    k = rearrange(k, 'b s h d -> (b h) d s')
    scores = torch.empty(batch_size * nheads, seqlen, seqlen, dtype=qkv.dtype, device=qkv.device)
    scores = rearrange(torch.baddbmm(scores, q, k, beta=0, alpha=1.0 / math.sqrt(d)), '(b h) t s -> b h t s',
                       h=nheads)
    if causal:
        causal_mask = torch.triu(torch.full((seqlen, seqlen), -10000.0, device=scores.device), 1)
        scores = scores + causal_mask.to(dtype=scores.dtype)
    attention = torch.softmax(scores, dim=-1)
    attention_drop = F.dropout(attention, 0.0)
    output = torch.einsum('bhts,bhsd->bthd', attention_drop, rearrange(v, 'b t h d -> b h t d'))
    return output.to(dtype=qkv.dtype)


def peer(q, k, v, causal, mask):
    s = torch.matmul(q, k.transpose(-1, -2))
    s = s * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(mask, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)


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
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(),
          flush=True)
    dt = torch.float16
    for d in (64, 128, 256):
        h = 2048 // d
        for t in (512, 1024, 2048, 4096, 8192, 16384):
            b = 16384 // t
            q4 = torch.randn(b, h, t, d, device="cuda", dtype=dt)
            k4, v4 = torch.randn_like(q4), torch.randn_like(q4)
            for causal in (False, True):
                def add(impl, sec):
                    rows.append(dict(impl=impl, d=d, h=h, t=t, b=b, causal=int(causal), time_s=sec))
                    print(impl, d, h, t, b, causal, f"{sec * 1e6:.1f} us", flush=True)
                for name, be in (("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION), ("sdpa_flash", SDPBackend.FLASH_ATTENTION)):
                    try:
                        with sdpa_kernel(be):
                            add(name, timed(lambda: F.scaled_dot_product_attention(q4, k4, v4, is_causal=causal)))
                    except Exception as e:   # a back end that refuses the shape
                        print(name, "refused", repr(e)[:100])
                if d == 256 or t > 8192:
                    continue
                qkv = torch.randn(b, t, 3, h, d, device="cuda", dtype=dt)
                add("fa_bench_eager", timed(lambda: attention_pytorch(qkv, causal)))
                # its launches, one at a time
                q, k, v = qkv.unbind(dim=2)
                q3 = rearrange(q, 'b t h d -> (b h) t d').contiguous()
                k3 = rearrange(k, 'b s h d -> (b h) d s').contiguous()
                sc = torch.empty(b * h, t, t, dtype=dt, device="cuda")
                add("part_baddbmm", timed(lambda: torch.baddbmm(sc, q3, k3, beta=0, alpha=0.125)))
                s4 = sc.view(b, h, t, t)
                add("part_softmax", timed(lambda: torch.softmax(s4, dim=-1)))
                add("part_scale", timed(lambda: s4 * 0.125))
                vv = rearrange(v, 'b t h d -> b h t d')
                add("part_einsum_pv", timed(lambda: torch.einsum('bhts,bhsd->bthd', s4, vv)))
                if causal:
                    add("part_mask_build", timed(lambda: torch.triu(torch.full((t, t), -10000.0, device="cuda"), 1)
                                                 .to(dtype=dt)))
                    m = torch.triu(torch.full((t, t), -10000.0, device="cuda"), 1).to(dtype=dt)
                    add("part_mask_add", timed(lambda: s4 + m))
                    bm = torch.ones(t, t, dtype=torch.bool, device="cuda").triu(1)
                    add("part_masked_fill", timed(lambda: s4.masked_fill(bm, float("-inf"))))
                else:
                    bm = None
                add("peer_eager", timed(lambda: peer(q4, k4, v4, causal, bm)))
                del qkv, sc, s4, q3, k3
                torch.cuda.empty_cache()
            del q4, k4, v4
            torch.cuda.empty_cache()
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1])
