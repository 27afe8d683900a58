"""The sampler engines run after the model's CUDA graph, timed on one GPU: our own torch function of each engine
line's op sequence (rooflab/step/sampler.py holds the facts and their file:line at the release read), at batch x
vocab.

    v0_random       vLLM 0.7.x V0, SamplingParams(temperature=1.0, top_p=1.0) (benchmark_latency.py's):
                    bf16 logits -> fp32, divide by the temperatures, softmax, log_softmax, the sample indices to
                    int64, probs gathered at them, an exponential draw, probs / q, argmax, the tokens to the host
    v1_random       vLLM V1 0.11.x, the same parameters: -> fp32, temperature divide, softmax, exponential draw,
                    probs / q, argmax, the tokens to the host (no log_softmax: no logprobs asked)
    greedy_argmax   SGLang 0.4.x at temperature 0 (bench_one_batch's): argmax over the fp32 logits, ids to int32
    fp32_cast       SGLang 0.4.x's logits[:, :vocab].float() inside its logits processor (in the graph)
    v0_graph_inputs vLLM 0.7.x V0's five copies into the graph's static buffers before replay: input ids, positions,
                    slot mapping [B] int64, seq lens [B] int32, block tables [B, 512] int32 (8192 / 16 blocks)

Timings, medians of REPEATS after WARMUP calls:
    queued   device time with the host ahead (the engine issues the sampler while the graph runs): a 2 ms
             torch.cuda._sleep first, CUDA events around the sequence; the tokens copied to pinned host memory
             without blocking, inside the events
    wall     an idle GPU, host clock from the first op to the tokens on the host (blocking copy): host-issue bound
    graph    the sequence captured in a CUDA graph, 50 copies, replayed: wall time / 50 (fp32_cast, greedy_argmax)

    python benchmarks/sampler_device_run.py --out DIR     # writes DIR/h200-sampler.csv
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import subprocess
import time
from pathlib import Path

BATCHES = (1, 8, 32, 64, 100, 128, 256)
VOCABS = (32000, 128256, 129280, 151936)
WARMUP, REPEATS, GRAPH_COPIES = 5, 15, 50
SLEEP_CYCLES = 4_000_000                       # ~2 ms at 1.98 GHz: longer than any sequence's host issue
BLOCK_TABLE_WIDTH = 8192 // 16                 # vLLM V0's graph block table: max_seq_len_to_capture / block_size


def sequences(torch, batch: int, vocab: int) -> dict:
    """{name: (fn, vocab-dependent)}: each fn runs one engine line's op sequence and returns the token tensor."""
    dev = "cuda"
    logits16 = torch.randn((batch, vocab), device=dev, dtype=torch.bfloat16)
    logits32 = logits16.float()
    temps = torch.ones((batch,), device=dev, dtype=torch.float32)
    sample_idx = torch.arange(batch, device=dev, dtype=torch.int32)   # V0 categorized_sample_indices (int)
    ids, pos, slots = (torch.randint(0, 1000, (batch,), device=dev, dtype=torch.int64) for _ in range(3))
    lens = torch.randint(1, 8192, (batch,), device=dev, dtype=torch.int32)
    tables = torch.randint(0, 10000, (batch, BLOCK_TABLE_WIDTH), device=dev, dtype=torch.int32)
    static = [torch.empty_like(t) for t in (ids, pos, slots, lens, tables)]

    def v0_random():
        x = logits16.to(torch.float)
        x.div_(temps.unsqueeze(dim=1))
        probs = torch.softmax(x, dim=-1, dtype=torch.float)
        logprobs = torch.log_softmax(x, dim=-1, dtype=torch.float)
        chosen = probs[sample_idx.long()]
        q = torch.empty_like(chosen)
        q.exponential_()
        del logprobs
        return chosen.div_(q).argmax(dim=1).view(-1, 1)

    def v1_random():
        x = logits16.to(torch.float32)
        x.div_(temps.unsqueeze(dim=1))
        probs = x.softmax(dim=-1, dtype=torch.float32)
        q = torch.empty_like(probs)
        q.exponential_()
        return probs.div_(q).argmax(dim=-1).view(-1)

    def greedy_argmax():
        return torch.argmax(logits32, -1).to(torch.int32)

    def fp32_cast():
        return logits16[:, :vocab].float()

    def v0_graph_inputs():
        for dst, src in zip(static, (ids, pos, slots, lens, tables)):
            dst.copy_(src, non_blocking=True)
        return static[0]

    return {"v0_random": v0_random, "v1_random": v1_random, "greedy_argmax": greedy_argmax,
            "fp32_cast": fp32_cast, "v0_graph_inputs": v0_graph_inputs}


#: Which timings each sequence is measured in (as the engine line runs it; greedy_argmax also in a graph for
#: rooflab's own step).
TIMINGS = {"v0_random": ("queued", "wall"), "v1_random": ("queued", "wall"),
           "greedy_argmax": ("queued", "wall", "graph"), "fp32_cast": ("graph",),
           "v0_graph_inputs": ("queued", "wall")}


def queued(torch, fn, pinned) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for i in range(WARMUP + REPEATS):
        torch.cuda.synchronize()
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        tokens = fn()
        pinned[: tokens.numel()].copy_(tokens.view(-1).to(pinned.dtype), non_blocking=True)
        end.record()
        end.synchronize()
        if i >= WARMUP:
            out.append(start.elapsed_time(end) / 1e3)
    return statistics.median(out)


def wall(torch, fn) -> float:
    out = []
    for i in range(WARMUP + REPEATS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn().cpu()
        out.append(time.perf_counter() - t0)
    return statistics.median(out[WARMUP:])


def graphed(torch, fn) -> float:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(GRAPH_COPIES):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / GRAPH_COPIES)
    return statistics.median(out)


def check(torch) -> None:
    """The exponential-race sampler draws token i with probability p_i (argmax p_i / q_i, q ~ Exp(1)): a three-token
    distribution drawn 200,000 times lands within 1% of p, and the greedy path picks the argmax."""
    p = torch.tensor([[0.6, 0.3, 0.1]], device="cuda").repeat(200_000, 1)
    q = torch.empty_like(p).exponential_()
    freq = torch.bincount(p.div(q).argmax(dim=1), minlength=3).float() / p.shape[0]
    assert torch.allclose(freq, p[0], atol=0.01), freq
    x = torch.randn((4, 1000), device="cuda")
    assert torch.equal(torch.argmax(x, -1), x.max(-1).indices)


def main() -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    check(torch)
    pinned = torch.empty((max(BATCHES),), dtype=torch.int64, pin_memory=True)
    rows = []
    for batch in BATCHES:
        for vocab in VOCABS:
            for name, fn in sequences(torch, batch, vocab).items():
                if name == "v0_graph_inputs" and vocab != VOCABS[0]:
                    continue                      # vocab-independent: measured once a batch
                for timing in TIMINGS[name]:
                    t = {"queued": lambda: queued(torch, fn, pinned), "wall": lambda: wall(torch, fn),
                         "graph": lambda: graphed(torch, fn)}[timing]()
                    rows.append((name, batch, 0 if name == "v0_graph_inputs" else vocab, timing, t))
                    print(f"{name:16s} b={batch:4d} v={vocab:6d} {timing:6s} {t * 1e6:9.2f} us", flush=True)
            torch.cuda.empty_cache()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip() or "unknown"
    clocks = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda, "git_commit": commit, "warmup": WARMUP, "repeats": REPEATS,
            "graph_copies": GRAPH_COPIES, "clocks_sm_mem_max_at_end": clocks,
            "shapes": f"logits [batch, vocab] bf16 (fp32 for greedy_argmax); v0_graph_inputs: 3 x [batch] int64, "
                      f"[batch] int32, [batch, {BLOCK_TABLE_WIDTH}] int32 (vocab 0: independent of it)",
            "checks": "exponential-race draw frequencies within 1% of p over 200,000 draws; greedy argmax",
            "command": "python benchmarks/sampler_device_run.py --out $OUT"}
    lines = [f"# {k}: {v}" for k, v in meta.items()] + ["sequence,batch,vocab,timing,seconds,repeats"]
    lines += [f"{name},{b},{v},{timing},{s:.4e},{REPEATS}" for name, b, v, timing, s in rows]
    (args.out / "h200-sampler.csv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
