"""Held-out set 9's vllm cases from GitHub (tests/data/engine_logs/heldout9/vllm-*.log, the rule in its SOURCES.md):
one dict a log, the fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before
any prediction, replay or parse was run on these logs.

Identifications that are not names (heldout9/SOURCES-vllm.md says so too): teo-ma/rtxpro6000-qwen-testing ran on an
Azure Standard_NC256ds_xl_RTXPRO6000BSE_v6 VM (its README: RTX Pro 6000 Blackwell, MIG forced on; the 30B logs' MoE
config line names device_name=NVIDIA_RTX_Pro_6000_Blackwell_DC-4-96Q, a 96 GB vGPU/DC profile of the Server
Edition); that is the bundled rtx-pro-6000 (the Workstation Edition, 96 GB), the only RTX PRO 6000 spec rooflab has.
voipmonitor/rtx6kpro's MiniMax-M2.5 page is about RTX PRO 6000 cards (rtx-pro-6000 too). Models: Qwen/Qwen3-30B-A3B
is the bundled qwen3-30b-a3b, nvidia/Qwen3-30B-A3B-NVFP4 the same with nvfp4 weights (the printed quantization
modelopt_fp4); Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8 is set 4's stored config of Qwen3-Coder-30B-A3B-Instruct
(heldout4/models/) with fp8_block weights (the log's MoE line: fp8_w8a8, block_shape=[128,128]; the FP8 release's
config differs from the stored one by its quantization_config only, as set 6 took it); Qwen/Qwen3-32B is qwen3-32b,
Qwen/Qwen3-32B-FP8 qwen3-32b with fp8_block weights (Qwen's FP8 release, 128 x 128 blocks, as set 6 did for
Qwen3-8B-FP8), RedHatAI/Qwen3-32B-NVFP4 qwen3-32b with nvfp4 weights (compressed-tensors NVFP4); MiniMaxAI/MiniMax-M2.5
is the bundled minimax-m2.5 (native FP8 weights, its default). Versions: 'v1' (V1 v0.13.0 printed, "release"
0.13.0; the MiniMax page prints no release: 'v1' without "release", as set 8's web cases). Settings rooflab has no
field for are in each log's line 1 (prefix caching, disable_custom_all_reduce, the vGPU/MIG profile).
"""
from pathlib import Path

from rooflab.units import WeightFormat

MODELS4 = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs" / "heldout4" / "models"
CODER_CONFIG = str(MODELS4 / "qwen3-coder-30b-a3b-instruct" / "config.json")

NVFP4 = WeightFormat.of("nvfp4", "the weight format")
FP8_BLOCK = WeightFormat.of("fp8_block", "the weight format")
GPU1 = "RTX Pro 6000 Blackwell (Azure RTXPRO6000BSE vGPU, MIG on; the README)"
GPU2 = "2x RTX Pro 6000 Blackwell (Azure RTXPRO6000BSE vGPU, MIG on; the README)"


def _one(log, model_label, model, seqs, weights=None):
    opts = {"utilization": 0.95, "max_model_len": 4096, "max_num_seqs": seqs, "release": "0.13.0"}
    if weights is not None:
        opts["weight_format"] = weights
    return dict(log=log, engine="vllm", gpu_label=GPU1, model_label=model_label, gpu="rtx-pro-6000", model=model,
                version="v1", options=opts)


def _tp2(log, model_label, weights=None):
    opts = {"tensor_parallel": 2, "enforce_eager": True, "max_model_len": 4096, "max_num_seqs": 8,
            "release": "0.13.0"}
    if weights is not None:
        opts["weight_format"] = weights
    return dict(log=log, engine="vllm", gpu_label=GPU2, model_label=model_label, gpu="rtx-pro-6000",
                model="qwen3-32b", version="v1", options=opts)


CASES: tuple[dict, ...] = (
    # teo-ma/rtxpro6000-qwen-testing artifacts/qwen3_30b_vllm_bench_20251222/ (one GPU, util 0.95, 4096, 32 seqs)
    _one("vllm-v1-0.13.0-qwen3-30b-a3b-bf16-rtx-pro-6000-vgpu-util095-maxlen4096-seqs32.log",
         "Qwen/Qwen3-30B-A3B, bf16", "qwen3-30b-a3b", 32),
    _one("vllm-v1-0.13.0-qwen3-coder-30b-a3b-instruct-fp8-rtx-pro-6000-vgpu-util095-maxlen4096-seqs32.log",
         "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8 (stored config, fp8 blocks)", CODER_CONFIG, 32, FP8_BLOCK),
    _one("vllm-v1-0.13.0-qwen3-30b-a3b-nvfp4-rtx-pro-6000-vgpu-util095-maxlen4096-seqs32.log",
         "nvidia/Qwen3-30B-A3B-NVFP4 (modelopt_fp4)", "qwen3-30b-a3b", 32, NVFP4),
    # artifacts/qwen3_32b_vllm_acc_20251223/ (16 seqs) and qwen3_32b_vllm_bench_20251222/ (32 seqs)
    _one("vllm-v1-0.13.0-qwen3-32b-bf16-rtx-pro-6000-vgpu-util095-maxlen4096-seqs16-acc.log",
         "Qwen/Qwen3-32B, bf16", "qwen3-32b", 16),
    _one("vllm-v1-0.13.0-qwen3-32b-bf16-rtx-pro-6000-vgpu-util095-maxlen4096-seqs32-bench.log",
         "Qwen/Qwen3-32B, bf16", "qwen3-32b", 32),
    _one("vllm-v1-0.13.0-qwen3-32b-fp8-rtx-pro-6000-vgpu-util095-maxlen4096-seqs16-acc.log",
         "Qwen/Qwen3-32B-FP8 (fp8 blocks)", "qwen3-32b", 16, FP8_BLOCK),
    _one("vllm-v1-0.13.0-qwen3-32b-fp8-rtx-pro-6000-vgpu-util095-maxlen4096-seqs32-bench.log",
         "Qwen/Qwen3-32B-FP8 (fp8 blocks)", "qwen3-32b", 32, FP8_BLOCK),
    _one("vllm-v1-0.13.0-qwen3-32b-nvfp4-rtx-pro-6000-vgpu-util095-maxlen4096-seqs16-acc.log",
         "RedHatAI/Qwen3-32B-NVFP4 (compressed-tensors)", "qwen3-32b", 16, NVFP4),
    _one("vllm-v1-0.13.0-qwen3-32b-nvfp4-rtx-pro-6000-vgpu-util095-maxlen4096-seqs32-bench.log",
         "RedHatAI/Qwen3-32B-NVFP4 (compressed-tensors)", "qwen3-32b", 32, NVFP4),
    # artifacts/qwen3_32b_vllm_tp2_livebench_20251225/logs/ (TP 2, eager, utilization default, 8 seqs)
    _tp2("vllm-v1-0.13.0-qwen3-32b-bf16-rtx-pro-6000-vgpu-x2-tp2-eager-maxlen4096-seqs8.log", "Qwen/Qwen3-32B, bf16"),
    _tp2("vllm-v1-0.13.0-qwen3-32b-fp8-rtx-pro-6000-vgpu-x2-tp2-eager-maxlen4096-seqs8.log",
         "Qwen/Qwen3-32B-FP8 (fp8 blocks)", FP8_BLOCK),
    _tp2("vllm-v1-0.13.0-qwen3-32b-nvfp4-rtx-pro-6000-vgpu-x2-tp2-eager-maxlen4096-seqs8.log",
         "RedHatAI/Qwen3-32B-NVFP4 (compressed-tensors)", NVFP4),
    # voipmonitor/rtx6kpro models/minimax-m25.md: 'FP8 on 4x GPUs (Official)', TP 4, the page's memory info
    dict(log="vllm-v1-minimax-m2.5-fp8-rtx-pro-6000x4-tp4-maxlen196608-rtx6kpro.log", engine="vllm",
         gpu_label="4x RTX PRO 6000 (the page)", model_label="MiniMaxAI/MiniMax-M2.5 (native FP8)",
         gpu="rtx-pro-6000", model="minimax-m2.5", version="v1",
         options={"tensor_parallel": 4, "max_model_len": 196608}),
)
