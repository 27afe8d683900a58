"""Held-out set 6's vllm cases (tests/data/engine_logs/heldout6/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case (log, engine, gpu_label, model_label, gpu, model, version, options),
each as the log or its post states it; written before any prediction, replay or parse was run on these logs.

Identifications that are not names (heldout6/SOURCES-vllm.md says so too): a model given as a stored config.json is
its folder under heldout6/models/ (the config's source in its SOURCE.md); "A100 80GB" (SXM or PCIe not stated, both
80 GiB) is a100-sxm-80gb, as CASES3; an AWQ checkpoint of a bundled architecture is the bundled spec with its weights
as int4_g128_zp (AWQ's 4-bit values, a 16-bit scale and a 4-bit zero point per 128 weights, as the checkpoint's name
and AWQ's format say); vLLM's in-flight bitsandbytes quantization (--quantization bitsandbytes on an unquantised
checkpoint) is nf4_dq (its loader quantizes to NF4 with double quantization). Versions: 'v0.2' for V0 v0.2.5 to
v0.6.3, 'v0' for V0 v0.6.5 to v0.10, 'v0.8' for V1 v0.8.x, 'v1' for V1 v0.9.1 and later; "release" is the release
the log prints, given where it lies inside its accounting's range (vocab.RELEASE_RANGE). Settings rooflab has no
field for (enforce_eager, attention and linear backends, PD disaggregation, data parallelism, prefix caching) are in
each log's line 1. Also: Qwen3-8B-FP8 is qwen3-8b with fp8_block weights (the logs' block_shape=[128,128] kernel
configs); the Kaggle H100 (SXM or PCIe not stated) is h100-sxm, as CASES4.
"""
from pathlib import Path

from rooflab.units import DType, WeightFormat

#: Qwen3-8B-FP8's weights: fp8 in 128 x 128 blocks (the logs' W8A8 Block FP8 kernel configs, block_shape=[128,128])
QWEN3_FP8_BLOCKS = WeightFormat.of("fp8_block", "the weight format")
MODELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs" / "heldout6" / "models"

#: Post hoc (issue 28, 2026-12-02 after set 6's evaluation at 15:06 UTC): the v0.29.0 logs' cases were given their
#: printed "release" once vllm-v1's range reached v0.29 (vocab.RELEASE_RANGE); nothing else in them changed.
CASES: tuple[dict, ...] = (
    dict(log="vllm-v0-0.6.6.post1-qwen2.5-1.5b-instruct-l40s-fp16-maxlen4096.log", engine="vllm",
         gpu_label="L40S 48GB (README)", model_label="Qwen2.5-1.5B-Instruct (stored config)", gpu="l40s",
         model=str(MODELS / "qwen2.5-1.5b-instruct"), version="v0",
         options={"utilization": 0.9, "max_model_len": 4096, "dtype": DType.fp16, "release": "0.6.6"}),
    dict(log="vllm-v0-0.5.0.post1-llama-3-8b-instruct-bnb4-t4-fp16.log", engine="vllm", gpu_label="Tesla T4",
         model_label="Meta-Llama-3-8B-Instruct, in-flight bitsandbytes 4-bit", gpu="t4", model="llama-3-8b",
         version="v0.2",
         options={"utilization": 0.9, "max_model_len": 8192, "dtype": DType.fp16, "max_num_seqs": 256,
                  "weight_format": WeightFormat.of("nf4_dq", "the weight format"), "release": "0.5.0"}),
    dict(log="vllm-v0-0.2.7-mixtral-8x7b-instruct-awq-a100-80gb-x2-tp2-util050-eager.log", engine="vllm",
         gpu_label="2x A100 80GB", model_label="TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ", gpu="a100-sxm-80gb",
         model="mixtral-8x7b", version="v0.2",
         options={"tensor_parallel": 2, "utilization": 0.5,
                  "weight_format": WeightFormat.of("int4_g128_zp", "the weight format"), "release": "0.2.7"}),
    # five start-ups of one file (akamaslabs/vllm-benchmark, study 10's smoke test), one log a configuration
    dict(log="vllm-v1-0.29.0-gpt-oss-20b-l4-tp1-util085-maxlen32768.log", engine="vllm",
         gpu_label="L4 (g6.12xlarge)", model_label="openai/gpt-oss-20b", gpu="l4", model="gpt-oss-20b",
         options={"utilization": 0.85, "max_model_len": 32768, "max_num_seqs": 256, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-gpt-oss-20b-l4-tp1-fp8kv-util085-maxlen32768.log", engine="vllm",
         gpu_label="L4 (g6.12xlarge)", model_label="openai/gpt-oss-20b", gpu="l4", model="gpt-oss-20b",
         options={"utilization": 0.85, "max_model_len": 32768, "max_num_seqs": 512, "kv_cache_dtype": "fp8",
                  "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-gpt-oss-20b-l4-tp1-block96-util085-maxlen32768.log", engine="vllm",
         gpu_label="L4 (g6.12xlarge)", model_label="openai/gpt-oss-20b", gpu="l4", model="gpt-oss-20b",
         options={"utilization": 0.85, "max_model_len": 32768, "max_num_seqs": 256, "block_size": 96,
                  "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-gpt-oss-20b-l4-tp2-ep-fp8kv-util085-maxlen32768.log", engine="vllm",
         gpu_label="2x L4 (g6.12xlarge)", model_label="openai/gpt-oss-20b", gpu="l4", model="gpt-oss-20b",
         options={"tensor_parallel": 2, "expert_parallel": 2, "utilization": 0.85, "max_model_len": 32768,
                  "max_num_seqs": 512, "kv_cache_dtype": "fp8_e4m3", "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-gpt-oss-20b-l4-dp4-eager-util085-maxlen32768.log", engine="vllm",
         gpu_label="4x L4 (g6.12xlarge), DP 4", model_label="openai/gpt-oss-20b", gpu="l4", model="gpt-oss-20b",
         options={"utilization": 0.85, "max_model_len": 32768, "max_num_seqs": 256, "release": "0.29.0"}),
    # ten files of akamaslabs/vllm-benchmark study 24 (kernel-bench): a prefill and a decode server a configuration
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-a1-flashinfer-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-a2-triton-attn-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-a3-flash-attn-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-a4-attn-auto-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-a5-flashinfer-fp8kv-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "kv_cache_dtype": "fp8", "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-a6-triton-attn-fp8kv-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "kv_cache_dtype": "fp8", "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-l1-linear-auto-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-l2-linear-humming-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-l3-linear-triton-default-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.29.0-qwen3-8b-fp8-l4-pd-nixl-l4-linear-triton-tuned-maxlen8192.log", engine="vllm",
         gpu_label="L4, PD: prefill + decode", model_label="Qwen/Qwen3-8B-FP8", gpu="l4", model="qwen3-8b",
         options={"utilization": 0.9, "max_model_len": 8192, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
                  "weight_format": QWEN3_FP8_BLOCKS, "release": "0.29.0"}),
    dict(log="vllm-v1-0.11.2-gpt-oss-120b-h100-fp8kv-util096-maxlen65536-second-run.log", engine="vllm",
         gpu_label="H100 (Kaggle)", model_label="gpt-oss-120b", gpu="h100-sxm", model="gpt-oss-120b",
         options={"utilization": 0.96, "kv_cache_dtype": "fp8_e4m3", "max_model_len": 65536, "max_num_seqs": 256,
                  "release": "0.11.2"}),
    dict(log="vllm-v1-0.11.2-gpt-oss-20b-h100-fp8kv-util096-maxlen65536.log", engine="vllm", gpu_label="H100 (Kaggle)",
         model_label="gpt-oss-20b", gpu="h100-sxm", model="gpt-oss-20b",
         options={"utilization": 0.96, "kv_cache_dtype": "fp8_e4m3", "max_model_len": 65536, "max_num_seqs": 256,
                  "release": "0.11.2"}),
)
