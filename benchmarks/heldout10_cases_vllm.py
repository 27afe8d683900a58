"""Held-out set 10's vLLM cases from GitHub (tests/data/engine_logs/heldout10/vllm-*.log, the rule in its SOURCES.md):
one dict a log, the fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before
any prediction, replay or parse was run on these logs.

Identifications that are not names (heldout10/SOURCES-vllm.md says so too): "Tesla T4" (ray-project/kuberay#4366:
two GPU nodes "each containing 1 Nvidia Tesla T4"; the log's own warning names 'Tesla T4') is t4; Qwen/Qwen2.5-0.5B-
Instruct is set 7's stored config (heldout7/models/qwen2.5-0.5b-instruct); "3090 | 24G" (zhjunqin/LLM-Learning's
hardware table) is rtx-3090; Meta-Llama-3-8B-Instruct is the bundled llama-3-8b.
Versions: 'v1' for V1 v0.11.0 (inside vllm-v1's range, the printed release passed); 'v0.2' for V0 v0.4.1: rooflab's
label of the V0 accounting for releases 0.2.5 - 0.6.3 (rooflab/engines/vocab.py RELEASE_RANGE), 'v0' being the one for
0.6.5 - 0.10.x; the printed release passed. dtype is passed where the log's config line prints one the command did not
ask for (the T4's fp16 fallback). vLLM's --data-parallel-size needs no field: each DP rank is an engine of its own
(rooflab.engines.settings.EngineSettings.attention_data_parallel's comment).
"""
from pathlib import Path

from rooflab.units import DType

ENGINE_LOGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs"
QWEN25_05B = str(ENGINE_LOGS / "heldout7" / "models" / "qwen2.5-0.5b-instruct" / "config.json")

CASES: tuple[dict, ...] = (
    # ray-project/kuberay#4366 (a copy in the code index): `vllm serve ... --data-parallel-size 2
    # --data-parallel-size-local 1 --data-parallel-backend=ray` on two T4 nodes, defaults otherwise
    dict(log="vllm-v1-0.11.0-qwen2.5-0.5b-instruct-t4x2-dp2-ray-fp16-kuberay.log", engine="vllm",
         gpu_label="2x Tesla T4, one a node (the issue), DP 2 over Ray", model_label="Qwen/Qwen2.5-0.5B-Instruct",
         gpu="t4", model=QWEN25_05B, version="v1",
         options={"dtype": DType.fp16, "release": "0.11.0"}),
    # zhjunqin/LLM-Learning inference/benchmark/README.md: `python -m vllm.entrypoints.openai.api_server --model
    # Meta-Llama-3-8B-Instruct --dtype auto --disable-log-requests` on one RTX 3090 (the page's hardware table)
    dict(log="vllm-v0-0.4.1-meta-llama-3-8b-instruct-rtx3090-defaults-llm-learning.log", engine="vllm",
         gpu_label="RTX 3090 24G (the page's table)", model_label="Meta-Llama-3-8B-Instruct",
         gpu="rtx-3090", model="llama-3-8b", version="v0.2", options={"release": "0.4.1"}),
)
