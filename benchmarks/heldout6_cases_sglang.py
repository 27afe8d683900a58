"""Held-out set 6's sglang cases (tests/data/engine_logs/heldout6/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case (log, engine, gpu_label, model_label, gpu, model, version, options),
each as the log or its post states it; written before any prediction, replay or parse was run on these logs.

Identifications that are not names (heldout6/SOURCES-sglang.md says so too): DeepSeek-R1, DeepSeek-R1-0528 and
DeepSeek-V3 to the bundled deepseek-v3 (the same published architecture, as CASES5); "H20" (Feb 2025, 96 GB) to h20;
H200 to h200-sxm; "NVIDIA GeForce RTX 4090" to rtx-4090; "NVIDIA H100 80GB HBM3" to h100-sxm; "RTX PRO 6000 Blackwell
(96GB)" to rtx-pro-6000; Qwen3-30B-A3B-FP8 to the bundled qwen3-30b-a3b with block-FP8 weights (its checkpoint's
[128, 128] blocks, as CASES5's Qwen3-235B-A22B-FP8); MiniMax-M2.5-NVFP4 to the bundled minimax-m2.5 with nvfp4 weights
(the post: NVFP4 on the expert MLPs, attention in BF16; rooflab takes one weight format). SGLang 0.4.x is the 'v0.4'
accounting (as CASES5), with `release` only where the log or its post prints one; the 2026 SGLang builds (a March
nightly wheel, June main at ebaf86d4, a v0.5 line past 0.5.10, August main, and the August sglang-kt 0.7.0 fork,
kvcache-ai's, sglang.__version__ 0.0.0.dev0) are 'v0.5', the nearest accounting rooflab has (EngineSettings takes no
release for it). `utilization` is given where the command or the printed server_args states mem_fraction_static.
Settings rooflab has no field for (bench_one_batch, CUDA-graph and torch.compile flags, Kubernetes / LWS, the attention
backend, SGLang's KTransformers expert offload: kt_num_gpu_experts 0 or 32, the other routed experts on the CPU) are in
each log's line 1.
"""

from rooflab.units import WeightFormat

CASES: tuple[dict, ...] = (
    dict(log="sglang-deepseek-r1-h20x16-tp16-mem093-lws-k8s.log", engine="sglang",
         gpu_label="16x H20 (2 nodes)", model_label="DeepSeek-R1", gpu="h20", model="deepseek-v3", version="v0.4",
         options={"tensor_parallel": 16, "utilization": 0.93}),
    dict(log="sglang-v0.4.3.post2-deepseek-v3-h200x8-tp8-bench-one-batch.log", engine="sglang",
         gpu_label="8x H200", model_label="DeepSeek-V3", gpu="h200-sxm", model="deepseek-v3", version="v0.4",
         options={"tensor_parallel": 8, "release": "0.4.3.post2"}),
    dict(log="sglang-v0.5-qwen3-14b-rtx4090x4-tp4-mem080.log", engine="sglang",
         gpu_label="4x RTX 4090", model_label="Qwen3-14B", gpu="rtx-4090", model="qwen3-14b", version="v0.5",
         options={"tensor_parallel": 4, "utilization": 0.8}),
    dict(log="sglang-v0.5-qwen3-30b-a3b-fp8-h100-mem083.log", engine="sglang",
         gpu_label="H100 80GB HBM3", model_label="Qwen3-30B-A3B-FP8", gpu="h100-sxm", model="qwen3-30b-a3b",
         version="v0.5",
         options={"utilization": 0.83, "weight_format": WeightFormat.of("fp8_block", "the weight format")}),
    dict(log="sglang-v0.5-qwen3-30b-a3b-fp8-h100-kt-cpu-experts-mem0841.log", engine="sglang",
         gpu_label="H100 80GB HBM3", model_label="Qwen3-30B-A3B-FP8 (KTransformers, experts on the CPU)",
         gpu="h100-sxm", model="qwen3-30b-a3b", version="v0.5",
         options={"utilization": 0.841, "weight_format": WeightFormat.of("fp8_block", "the weight format")}),
    dict(log="sglang-v0.5-deepseek-r1-0528-h100x8-tp8-kt-cpu-experts-mem0831.log", engine="sglang",
         gpu_label="8x H100 80GB HBM3", model_label="DeepSeek-R1-0528 (KTransformers, experts on the CPU)",
         gpu="h100-sxm", model="deepseek-v3", version="v0.5",
         options={"tensor_parallel": 8, "utilization": 0.831}),
    dict(log="sglang-kt-0.7.0-qwen3-30b-a3b-h100-kt-32-gpu-experts-mem085.log", engine="sglang",
         gpu_label="H100 80GB HBM3", model_label="Qwen3-30B-A3B (sglang-kt, 32 of 128 experts on the GPU)",
         gpu="h100-sxm", model="qwen3-30b-a3b", version="v0.5",
         options={"utilization": 0.85}),
    dict(log="sglang-v0.5-minimax-m2.5-nvfp4-rtx-pro-6000x2-tp2.log", engine="sglang",
         gpu_label="2x RTX PRO 6000 Blackwell", model_label="MiniMax-M2.5-NVFP4", gpu="rtx-pro-6000",
         model="minimax-m2.5", version="v0.5",
         options={"tensor_parallel": 2, "weight_format": WeightFormat.of("nvfp4", "the weight format")}),
)
