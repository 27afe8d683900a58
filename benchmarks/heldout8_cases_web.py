"""Held-out set 8's web cases (tests/data/engine_logs/heldout8/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction,
replay or parse was run on these logs.

Identifications that are not names (heldout8/SOURCES-web.md says so too): a model given as a stored config.json is its
folder under heldout8/models/ (the config's source in its SOURCE.md): Qwen/Qwen2.5-14B-Instruct-AWQ, whose weights are
int4_g128_zp (AWQ's 4-bit values, a 16-bit scale and a 4-bit zero point per 128 weights, as the config's
quantization_config says and as set 6 gave AWQ checkpoints); "L40S 48 GB" (an AWS g6e.xlarge) and "L40S" are l40s;
"8xH100-80 GB" nodes on AWS are h100-sxm (SXM or PCIe is not stated; rooflab's h100-sxm and h100-pcie are both
79.65 GiB; h100-sxm as sets 4 and 6 took an H100 80GB of unstated form); "L4" is l4;
deepseek-ai/DeepSeek-R1 is the bundled deepseek-v3 (the same published architecture, as CASES5-7); openai/gpt-oss-20b
and -120b are the bundled gpt-oss-20b and gpt-oss-120b.
Versions: 'v0.8' for the post that names vLLM 0.8.3's V1 engine (no "release" passed: the kept lines print none, and
"release" is the release a log prints, as in CASES6 and CASES7); 'v1' without a release for Ray
Serve LLM's example lines, V1 (kv_cache_utils.py) with no release printed: gpt-oss needs vLLM >= 0.10.1 (Ray's page),
and the DeepSeek-R1 line's release is not stated (V1 by its kv_cache_utils.py and Ray >= 2.48's V1 default; whether
v0.8's or v1's accounting applies cannot be read from the line, so the case keeps Case's default 'v1', as the cases of
set 1 with V1 lines of unknown release do). Settings rooflab has no field for are in each log's line 1 (the
quantization kernel awq_marlin, chunked prefill, the reasoning parser, replicas).
"""

from pathlib import Path

from rooflab.units import DType, WeightFormat

MODELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs" / "heldout8" / "models"
QWEN25_14B_AWQ = str(MODELS / "qwen2.5-14b-instruct-awq")

CASES: tuple[dict, ...] = (
    # pparmar15.github.io 'Making Models Fit': the FP8-KV experiment's baseline start-up (AWQ Marlin, fp16 KV)
    dict(log="web-vllm-v1-0.8.3-qwen2.5-14b-instruct-awq-l40s-fp16-util090-maxlen4096.log", engine="vllm",
         gpu_label="L40S 48 GB (AWS g6e.xlarge, the post)",
         model_label="Qwen/Qwen2.5-14B-Instruct-AWQ (stored config), awq_marlin, fp16",
         gpu="l40s", model=QWEN25_14B_AWQ, version="v0.8",
         options={"utilization": 0.9, "max_model_len": 4096, "max_num_batched_tokens": 2048,
                  "dtype": DType.fp16, "weight_format": WeightFormat.of("int4_g128_zp", "the weight format")}),
    # docs.ray.io 'Deploy a large-sized LLM': DeepSeek-R1 on two nodes of 8x H100 80GB, TP 8 x PP 2
    dict(log="web-vllm-v1-deepseek-r1-h100x16-tp8-pp2-maxlen32768-ray-serve.log", engine="vllm",
         gpu_label="2 nodes x 8 H100 80GB (AWS, the page)", model_label="deepseek-ai/DeepSeek-R1",
         gpu="h100-sxm", model="deepseek-v3", version="v1",
         options={"tensor_parallel": 8, "pipeline_parallel": 2, "max_model_len": 32768}),
    # docs.ray.io 'Deploy gpt-oss': the page's two example start-ups
    dict(log="web-vllm-v1-gpt-oss-20b-l4-maxlen32768-ray-serve.log", engine="vllm",
         gpu_label="1x L4 (the page)", model_label="openai/gpt-oss-20b", gpu="l4", model="gpt-oss-20b",
         version="v1", options={"max_model_len": 32768}),
    dict(log="web-vllm-v1-gpt-oss-120b-l40sx2-tp2-maxlen32768-ray-serve.log", engine="vllm",
         gpu_label="2x L40S (the page)", model_label="openai/gpt-oss-120b", gpu="l40s", model="gpt-oss-120b",
         version="v1", options={"tensor_parallel": 2, "max_model_len": 32768}),
)
