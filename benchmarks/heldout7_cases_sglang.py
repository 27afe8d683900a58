"""Held-out set 7's sglang cases (tests/data/engine_logs/heldout7/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction,
replay or parse was run on these logs.

Identifications that are not names (heldout7/SOURCES-sglang.md says so too): a model given as a stored config.json is
its folder under heldout7/models/ (the config's source in its SOURCE.md): Qwen2.5-0.5B-Instruct, a transformers 4.49.0
re-save whose architecture figures are the published ones (it writes "torch_dtype": "float32" where the published file
writes bfloat16; the runs passed no --dtype and the logs print bf16 KV); "NVIDIA H100 NVL" to h100-nvl; the Azure ND
MI300X v5 VM's AMD Instinct MI300X to mi300x; DeepSeek-R1 to the bundled deepseek-v3 (the same published architecture,
as CASES5 and CASES6); "NVIDIA RTX PRO 6000 Blackwell Workstation Edition" to rtx-pro-6000; Qwen/Qwen3-30B-A3B to the
bundled qwen3-30b-a3b. SGLang 0.4.2 is the 'v0.4' accounting with release "0.4.2" (the command's image tag
lmsysorg/sglang:v0.4.2-rocm620); 0.5.10.post1 is 'v0.5' with release "0.5.10.post1" (inside v0.5.3 - v0.5.10); 0.5.13 is
past the modelled range: 'v0.5', no release. `utilization` is given where the command or the printed server_args states
mem_fraction_static, and left out where neither does; `dtype` where the command passes --dtype. Settings rooflab has no
field for are in each log's line 1: the attention / sampling / MoE-runner backends, --disable-cuda-graph,
--disable-piecewise-cuda-graph, --disable-overlap-schedule, --enable-return-routed-experts, and SGLang's
--max-total-tokens (4096 in the RTX PRO 6000 run: it caps that pool, and rooflab cannot state it).
"""

from pathlib import Path

from rooflab.units import DType

MODELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs" / "heldout7" / "models"
QWEN25_05B = str(MODELS / "qwen2.5-0.5b-instruct")

CASES: tuple[dict, ...] = (
    dict(log="sglang-v0.5.10.post1-qwen2.5-0.5b-instruct-h100nvl-mem086-triton-no-cuda-graph.log", engine="sglang",
         gpu_label="H100 NVL (README's check_environment)", model_label="Qwen2.5-0.5B-Instruct (stored config)",
         gpu="h100-nvl", model=QWEN25_05B, version="v0.5",
         options={"utilization": 0.86, "release": "0.5.10.post1"}),
    dict(log="sglang-v0.5.10.post1-qwen2.5-0.5b-instruct-h100nvl-defaults.log", engine="sglang",
         gpu_label="H100 NVL (README's check_environment)", model_label="Qwen2.5-0.5B-Instruct (stored config)",
         gpu="h100-nvl", model=QWEN25_05B, version="v0.5",
         options={"release": "0.5.10.post1"}),
    dict(log="sglang-v0.4.2-rocm-deepseek-r1-mi300x-x8-tp8.log", engine="sglang",
         gpu_label="8x MI300X (Azure ND MI300X v5)", model_label="DeepSeek-R1", gpu="mi300x", model="deepseek-v3",
         version="v0.4", options={"tensor_parallel": 8, "release": "0.4.2"}),
    dict(log="sglang-v0.5.13-qwen3-30b-a3b-rtx-pro-6000-mem090-max-total-tokens-4096.log", engine="sglang",
         gpu_label="RTX PRO 6000 Blackwell Workstation", model_label="Qwen3-30B-A3B (--max-total-tokens 4096)",
         gpu="rtx-pro-6000", model="qwen3-30b-a3b", version="v0.5",
         options={"utilization": 0.9, "dtype": DType.bf16}),
)
