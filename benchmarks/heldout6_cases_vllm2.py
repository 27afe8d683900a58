"""Held-out set 6's third collector's vLLM cases (tests/data/engine_logs/heldout6/vllm2-*.log, the rule in its SOURCES.md):
one dict a log, the fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before
any prediction, replay or parse was run on these logs.

Identifications that are not names (heldout6/SOURCES-vllm2.md says so too): Qwen2.5-7B-Instruct is the bundled
qwen2.5-7b, Llama-3.3-70B-Instruct the bundled llama-3.3-70b and unsloth/Llama-3.2-3B-Instruct (a re-upload of
Meta's checkpoint) the bundled llama-3.2-3b; Qwen2.5-1.5B-Instruct is the config.json stored in
heldout6/models/qwen2.5-1.5b-instruct (the vLLM half's, with its source), passed with the dtype each log's engine config
prints (bf16 on the H100, fp16 on the T4; the stored re-save writes "dtype": "float16"); Qwen3-Coder-30B-A3B-Instruct is
the config.json set 4 stored (heldout4/models/qwen3-coder-30b-a3b-instruct); MiniMax-M2.7 is the bundled minimax-m2.5
(the same MiniMaxM2 shape: 62 layers, 48 / 8 heads of 128, 256 experts of 1536, top 8, as M2.7's published config
quoted in the code corpus gives it, and the official fp8 128 x 128 block checkpoint the bundled spec ships); "H100 80GB
HBM3" (the SXM5 part's device name) is h100-sxm; "A100-SXM4-80GB" is a100-sxm-80gb; "GeForce RTX 3090" is rtx-3090;
L40S is l40s; Tesla T4 / NVIDIA T4 is t4. Versions: 'v1' for the V1 engines (the mystous/vllm_hybrid builds of
upstream main of 2026-04-22, the v0.20.0 base, printing 0.1.dev15917; v0.22.1rc1; v0.24.0), with no "release": the
mystous builds print no release and the others lie past vllm-v1's range (vocab.RELEASE_RANGE, to v0.20); 'v0' for the
V0 engines (v0.7.2, v0.8.2), with the printed release. Settings rooflab has no field for (enforce_eager, CUDA-graph
mode, prefix caching, tool parsers, the Unsloth processes that share the GPU) are in each log's line 1.
"""
from pathlib import Path

from rooflab.units import DType

_DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs"
QWEN25_15B = str(_DATA / "heldout6" / "models" / "qwen2.5-1.5b-instruct")
CODER_CONFIG = str(_DATA / "heldout4" / "models" / "qwen3-coder-30b-a3b-instruct" / "config.json")

#: Post hoc (issue 28, 2026-12-02 after set 6's evaluation at 15:06 UTC): the v0.24.0 and v0.22.1rc1 logs' cases were
#: given their printed "release" once vllm-v1's range reached v0.29 (vocab.RELEASE_RANGE); the main builds keep none
#: (they print no release); nothing else changed.
CASES: tuple[dict, ...] = (
    # four start-ups of mystous/vllm_hybrid eval/results (four files), the fork's own flags off
    dict(log="vllm2-v1-main-2026-04-qwen2.5-7b-instruct-rtx3090-util090-maxlen4096.log", engine="vllm",
         gpu_label="GeForce RTX 3090 (env.snapshot)", model_label="Qwen/Qwen2.5-7B-Instruct", gpu="rtx-3090",
         model="qwen2.5-7b", options={"utilization": 0.9, "max_model_len": 4096}),
    dict(log="vllm2-v1-main-2026-04-llama-3.3-70b-instruct-h100x8-tp8-util085-maxlen16384.log", engine="vllm",
         gpu_label="8x H100 80GB HBM3 (result folder)", model_label="meta-llama/Llama-3.3-70B-Instruct",
         gpu="h100-sxm", model="llama-3.3-70b",
         options={"tensor_parallel": 8, "utilization": 0.85, "max_model_len": 16384}),
    dict(log="vllm2-v1-main-2026-04-qwen2.5-1.5b-instruct-h100-util040-eager-maxlen512.log", engine="vllm",
         gpu_label="H100 80GB HBM3 (result folder)", model_label="Qwen/Qwen2.5-1.5B-Instruct (stored config)",
         gpu="h100-sxm", model=QWEN25_15B,
         options={"utilization": 0.4, "max_model_len": 512, "dtype": DType.bf16}),
    dict(log="vllm2-v1-main-2026-05-llama-3.3-70b-instruct-h100x8-tp8-util085-eager-maxlen8192.log", engine="vllm",
         gpu_label="8x H100 80GB HBM3 (result folder)", model_label="meta-llama/Llama-3.3-70B-Instruct",
         gpu="h100-sxm", model="llama-3.3-70b",
         options={"tensor_parallel": 8, "utilization": 0.85, "max_model_len": 8192, "max_num_seqs": 256}),
    dict(log="vllm2-v1-0.24.0-qwen3-coder-30b-a3b-instruct-l40sx4-tp4-util090-maxlen32768.log", engine="vllm",
         gpu_label="4x L40S (g6e.12xlarge, README)", model_label="Qwen/Qwen3-Coder-30B-A3B-Instruct (stored config)",
         gpu="l40s", model=CODER_CONFIG,
         options={"tensor_parallel": 4, "utilization": 0.9, "max_model_len": 32768, "release": "0.24.0"}),
    dict(log="vllm2-v1-0.22.1rc1-minimax-m2.7-fp8-a100-80gb-x4-tp4-util090-maxlen131072.log", engine="vllm",
         gpu_label="4x A100-SXM4-80GB (the guide)", model_label="MiniMaxAI/MiniMax-M2.7 (FP8)", gpu="a100-sxm-80gb",
         model="minimax-m2.5",
         options={"tensor_parallel": 4, "utilization": 0.9, "max_model_len": 131072, "release": "0.22.1rc1"}),
    dict(log="vllm2-v0-0.7.2-qwen2.5-1.5b-instruct-t4-fp16-util050-maxlen32768-unsloth-grpo.log", engine="vllm",
         gpu_label="Tesla T4 (Unsloth banner)", model_label="Qwen/Qwen2.5-1.5B-Instruct (stored config), fp16",
         gpu="t4", model=QWEN25_15B, version="v0",
         options={"utilization": 0.5, "max_model_len": 32768, "dtype": DType.fp16, "release": "0.7.2"}),
    dict(log="vllm2-v0-0.8.2-llama-3.2-3b-instruct-t4-fp16-util0894-maxlen2048-unsloth-sdk.log", engine="vllm",
         gpu_label="NVIDIA T4 (the notebook)", model_label="unsloth/Llama-3.2-3B-Instruct, fp16", gpu="t4",
         model="llama-3.2-3b", version="v0",
         options={"utilization": 0.8938626454842437, "max_model_len": 2048, "max_num_seqs": 192,
                  "max_num_batched_tokens": 2048, "dtype": DType.fp16, "release": "0.8.2"}),
)
