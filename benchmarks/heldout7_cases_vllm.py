"""Held-out set 7's vllm cases (tests/data/engine_logs/heldout7/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction,
replay or parse was run on these logs.

Identifications that are not names (heldout7/SOURCES-vllm.md says so too): Qwen/Qwen3-8B is the bundled qwen3-8b;
"NVIDIA A100-SXM4-40GB" (dariustanrd/tokenkaki's nvidia-smi) is a100-40gb; unsloth/meta-llama-3.1-8b-instruct-bnb-4bit
(Meta's Llama-3.1-8B-Instruct pre-quantized by bitsandbytes, the printed config: nf4, double quantization, lm_head not
converted) is the bundled llama-3.1-8b with weights nf4_dq, as set 6 did for vLLM's in-flight bitsandbytes; Tesla T4
is t4; meta-llama/Meta-Llama-3-8B-Instruct is the bundled llama-3-8b; "a single GPU in an MI300X system" is mi300x;
Qwen/Qwen2.5-72B-Instruct is the bundled qwen2.5-72b; "L40S 48GB * 4EA" (a g6e.12xlarge) is l40s.
Versions: 'v1' for V1 v0.9.2, v0.19.0 and v0.19.1 (inside vllm-v1's range, so the printed release is passed), 'v0' for V0
v0.7.2 (printed release passed), 'v0.2' for the V0 engine the ROCm blog built from vLLM main of late August 2024
(between v0.5.5 and v0.6.0; no release printed, none passed). Settings rooflab has no field for are in each log's
line 1 (CUDA-graph mode, prefix caching, async scheduling, the Unsloth process on the GPU).
"""
from rooflab.units import DType, WeightFormat

CASES: tuple[dict, ...] = (
    # dariustanrd/tokenkaki: one A100-SXM4-40GB of a 4 x A100 machine, two releases of the same Qwen3-8B set-up
    dict(log="vllm-v1-0.9.2-qwen3-8b-a100-40gb-bench-throughput-maxlen40960.log", engine="vllm",
         gpu_label="A100-SXM4-40GB (the repository's post, nvidia-smi)", model_label="Qwen/Qwen3-8B",
         gpu="a100-40gb", model="qwen3-8b", version="v1",
         options={"utilization": 0.9, "max_model_len": 40960, "max_num_batched_tokens": 8192, "release": "0.9.2"}),
    dict(log="vllm-v1-0.19.1-qwen3-8b-a100-40gb-serve-maxlen40960.log", engine="vllm",
         gpu_label="A100-SXM4-40GB (the post, nvidia-smi)", model_label="Qwen/Qwen3-8B", gpu="a100-40gb",
         model="qwen3-8b", version="v1",
         options={"utilization": 0.9, "max_model_len": 40960, "release": "0.19.1"}),
    # ameureka/Unsloth_Lllama_deepseek: Unsloth's fast_inference on a Colab-class T4, LoRA rank 32
    dict(log="vllm-v0-0.7.2-llama-3.1-8b-instruct-bnb4-t4-fp16-util060-maxlen512-unsloth.log", engine="vllm",
         gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/meta-llama-3.1-8b-instruct-bnb-4bit (bitsandbytes nf4, double quant), fp16",
         gpu="t4", model="llama-3.1-8b", version="v0",
         options={"utilization": 0.5959, "max_model_len": 512, "max_num_seqs": 160, "max_num_batched_tokens": 512,
                  "dtype": DType.fp16, "weight_format": WeightFormat.of("nf4_dq", "the weight format"),
                  "enable_lora": True, "max_lora_rank": 32, "release": "0.7.2"}),
    # ROCm/rocm-blogs vllm-optimize: one MI300X, the same server with and without an fp8 KV cache
    dict(log="vllm-v0-rocm-llama-3-8b-instruct-mi300x-fp8kv.log", engine="vllm",
         gpu_label="MI300X (the post)", model_label="meta-llama/Meta-Llama-3-8B-Instruct", gpu="mi300x",
         model="llama-3-8b", version="v0.2", options={"kv_cache_dtype": "fp8"}),
    dict(log="vllm-v0-rocm-llama-3-8b-instruct-mi300x-kv-auto.log", engine="vllm",
         gpu_label="MI300X (the post)", model_label="meta-llama/Meta-Llama-3-8B-Instruct", gpu="mi300x",
         model="llama-3-8b", version="v0.2", options={}),
    # gnosia93/langgraph-agentic-ai: Qwen2.5-72B-Instruct, TP 4 on one g6e.12xlarge (4x L40S 48GB)
    dict(log="vllm-v1-0.19.0-qwen2.5-72b-instruct-l40sx4-tp4-util090-maxlen8192.log", engine="vllm",
         gpu_label="4x L40S 48GB (g6e.12xlarge, the post)", model_label="Qwen/Qwen2.5-72B-Instruct", gpu="l40s",
         model="qwen2.5-72b", version="v1",
         options={"tensor_parallel": 4, "utilization": 0.9, "max_model_len": 8192, "release": "0.19.0"}),
)
