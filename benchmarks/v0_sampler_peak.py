"""Measure the torch memory vLLM V0's profile-run sampler holds, in bytes per logit (needs a CUDA GPU and torch).

    python benchmarks/v0_sampler_peak.py R V      R rows (the profile's sequences), V the vocabulary

The tensor sequence is the one rooflab/engines/profile.py counts for V0 (vllm v0.6.4 / v0.7.0
vllm/model_executor/layers/sampler.py: an fp32 copy of the bf16 logits, the top-k / top-p sort with its masks,
softmax and cumulative sum, the scatter back, then probabilities and log-probabilities), written here from that
description with plain torch calls. Each line prints the bytes held now and the peak so far, per logit, above the
bf16 logits (add 2 for them). On an H200 with torch 2.11.0+cu130: R 256, V 128,256 -> peak 36.06 (38.06 with the
logits; profile.py's 38), 30.05 after the scatter back (32); R 32 -> 49.05 (51.05; profile.py's 50).
"""

import sys

import torch


def main(rows: int, vocab: int) -> None:
    logits16 = torch.randn(rows, vocab, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()

    def stage(name: str) -> None:
        torch.cuda.synchronize()
        now = (torch.cuda.memory_allocated() - base) / (rows * vocab)
        peak = (torch.cuda.max_memory_allocated() - base) / (rows * vocab)
        print(f"{name:20s} now {now:6.2f} B/logit  peak {peak:6.2f}")

    x = logits16.to(torch.float)
    stage("fp32 copy")
    values, indices = x.sort(dim=-1, descending=False)
    stage("sort")
    kth = values.gather(1, (values.size(1) - torch.full((rows,), vocab - 1, device="cuda")).unsqueeze(1))
    k_mask = values < kth
    values.masked_fill_(k_mask, -float("inf"))
    stage("top-k mask")
    probs_sorted = values.softmax(dim=-1)
    stage("softmax")
    cumulative = probs_sorted.cumsum(dim=-1)
    stage("cumsum")
    p_mask = cumulative <= 1 - 0.99
    p_mask[:, -1] = False
    values.masked_fill_(p_mask, -float("inf"))
    stage("top-p mask")
    back = torch.empty_like(values).scatter_(dim=-1, index=indices, src=values)
    stage("scatter back")
    del x, values, indices, k_mask, probs_sorted, cumulative, p_mask
    probs = torch.softmax(back, dim=-1, dtype=torch.float)
    logprobs = torch.log_softmax(back, dim=-1, dtype=torch.float)
    stage("probs, logprobs")
    del probs, logprobs
    print("torch", torch.__version__, "rows", rows, "vocab", vocab)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
