"""The closed sets a published row names: FLOP conventions, metrics, statistics, implementations, formats; and the
bounds no published figure passes."""

from __future__ import annotations

from ..vocab import _Named

#: A row whose note starts with this is a measurement defect (an overclocked card, a wrong FLOP count, a timing
#: bug); the rest of the note says why. Only such a row may beat its floor.
DEFECT_PREFIX = "defect:"
#: No published kernel reaches 100 PFLOP/s, and none takes an hour.
MAX_TFLOPS = 1e5
MAX_SECONDS = 3600.0 * 24


class Convention(_Named):
    """How a source's published rate relates to time: FLOP = 2 B H T_q T_kv (d + d_v), or the source gives times.

    fa          halved when causal. The FlashAttention papers' count: FlashAttention-2 (arXiv 2307.08691) section
                4.1 and FlashAttention-3 (arXiv 2407.08608) section 4.1 give 4 B H T^2 d for the forward pass
                (d_v = d), halved under a causal mask; their benchmark scripts (flash-attention's
                benchmarks/benchmark_flash_attention.py, `flops`) and tritonbench's flash_attention operator
                count the same.
    fa_no_half  never halved: FlashMLA's count 2 h_q s_q s_k (d_k + d_v) (its deep-dive post of 2025-04-22,
                docs/20250422-new-kernel-deep-dive.md, and tests' `FLOPs = s_q * total_seqlens * h_q * (d + dv) * 2`).
    time        the source gives times; rows carry metric time_s.
    """

    fa = "fa"
    fa_no_half = "fa_no_half"
    time = "time"


class KernelMetric(_Named):
    tflops = "tflops"      # 10^12 FLOP/s under the source's convention
    time_s = "time_s"


class StepMetric(_Named):
    tpot_s = "tpot_s"
    step_s = "step_s"
    batch1_latency_s = "batch1_latency_s"
    batch_latency_s = "batch_latency_s"    # one static batch of B, prefill and every decode step (vllm bench latency)
    output_tokens_per_s = "output_tokens_per_s"
    output_tokens_per_s_per_gpu = "output_tokens_per_s_per_gpu"
    total_tokens_per_s = "total_tokens_per_s"


class ServingMetric(_Named):
    ttft_s = "ttft_s"
    tpot_s = "tpot_s"
    itl_s = "itl_s"
    e2e_s = "e2e_s"
    output_tokens_per_s = "output_tokens_per_s"
    output_tokens_per_s_per_gpu = "output_tokens_per_s_per_gpu"
    output_tokens_per_s_per_user = "output_tokens_per_s_per_user"


class Statistic(_Named):
    mean = "mean"
    median = "median"
    p90 = "p90"
    p99 = "p99"


class Implementation(_Named):
    """What a kernel row timed. rooflab predicts the FA2 class (fa2, torch_sdpa_flash), cuDNN (cudnn,
    torch_sdpa_cudnn) and eager PyTorch (torch_eager: QK^T, softmax, PV as separate launches); the rest get floors."""

    fa2 = "fa2"                            # FlashAttention 2.x
    fa3 = "fa3"
    fa4 = "fa4"
    cudnn = "cudnn"
    torch_eager = "torch_eager"            # 'standard attention' / 'Pytorch' in the FlashAttention figures
    torch_sdpa_flash = "torch_sdpa_flash"
    torch_sdpa_cudnn = "torch_sdpa_cudnn"
    triton = "triton"                      # the Triton tutorial's fused attention
    flashinfer = "flashinfer"
    flashinfer_fp16_qk = "flashinfer_fp16_qk"   # allow_fp16_qk_reduction: q.k accumulated in fp16
    flashmla = "flashmla"
    thunderkittens = "thunderkittens"
    xformers = "xformers"


#: The closed sets a step or serving row's formats name.
WEIGHT_FORMATS = ("fp16", "bf16", "fp8", "nvfp4", "mxfp4", "int8", "int4", "awq", "gptq")
KV_CACHE_DTYPES = ("fp16", "bf16", "fp8_e4m3", "fp8_e5m2")


__all__ = ["DEFECT_PREFIX", "KV_CACHE_DTYPES", "MAX_SECONDS", "MAX_TFLOPS", "WEIGHT_FORMATS", "Convention",
           "Implementation", "KernelMetric", "ServingMetric", "Statistic", "StepMetric"]
