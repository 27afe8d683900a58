"""Held-out set 9's "other" cases (tests/data/engine_logs/heldout9/, the rule in its SOURCES.md): SGLang start-up
logs from GitHub and start-up logs of either engine from web pages that are not GitHub; one dict a log, the fields of
benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction, replay or
parse was run on these logs.

All come from one repository, github.com/WanHaoRan/sglang (a fork of SGLang used for a HiCache / agent KV-tiering
evaluation; server.log files under hicache_eval/results/ @d4280b4f and agent_cache/results/ @7e23b2cb), each a
distinct configuration: three models on one NVIDIA A100-SXM4-80GB (GCP a2-ultragpu-1g, the repository's
agent_cache/RUNBOOK.md section 1) to a100-sxm-80gb, and one on an H200 (the log's MoE config path names
device_name=NVIDIA_H200; 139 GB free before loading) to h200-sxm. Qwen/Qwen3-30B-A3B-Instruct-2507 is the bundled
qwen3-30b-a3b (the same Qwen3MoeForCausalLM shape; the 2507 release lengthens the context, as set 7 wrote the base).
Identifications that are not names (heldout9/SOURCES-other.md says so too): Qwen/Qwen3-32B-FP8 to the bundled
qwen3-32b with the fp8_block weight format (the log: 'Detected fp8 checkpoint', 'quant=fp8, fmt=e4m3', as set 6 wrote
Qwen3-30B-A3B-FP8); casperhansen/llama-3.3-70b-instruct-awq to the bundled llama-3.3-70b, with NO weight_format: the
log prints 'quant=awq, bits=4' but neither the group size nor the zero point, and the checkpoint's config.json is not
stored here, so the lead decides; Qwen/Qwen3-8B to the bundled qwen3-8b. The engine is the image
lmsysorg/sglang:nightly-dev-20260907 with the fork's checkout (upstream ~2026-09-07) bound over it (the A100 runs,
RUNBOOK.md; the H200 run is the same fork's agent_cache/ evaluation five days later), which prints no version: 'v0.5' with no release, as set 7 wrote 0.5.13 (past the modelled range). Options are the printed
server_args: mem_fraction_static to `utilization`, context_length to `max_model_len`, page_size to `block_size`,
kv_cache_dtype where it is not 'auto'. Settings rooflab has no field for are in each log's line 1: the hierarchical
cache (--enable-hierarchical-cache with a nixl storage tier, on in the three A100 runs, off in the H200 run), the attention backend (triton in the
fp8_e5m2 runs, flashinfer in the 8B run), chunked_prefill_size 8192, Marlin weight-only FP8 / awq_marlin kernels.
Top-up (second freeze, a third collector, the same rule; heldout9/SOURCES-other.md "Top-up (second freeze)"): 8 more
start-ups from the same repository, each a configuration distinct from the four above and from each other: three
Qwen3-32B-FP8 runs on the same A100 box with --max-total-tokens caps and --max-running-requests 64 (agent_cache/
results/20260918_*, the printed server_args: max_total_tokens to `max_total_tokens`, max_running_requests as written),
and the same three models on two other GPUs of the evaluation: an H100 PCIe 80 GB (campaigns of 2026-09-07/08, GPU
named in each run folder's REPORT.md) to h100-pcie, and an H200 (2026-09-21, versions.txt 'NVIDIA H200 (143,771 MiB,
SM90)', no 'NVL') to h200-sxm. Qwen3-32B-FP8 runs native FP8 (DeepGEMM) on the two SM90 GPUs; the weight format is
the same fp8_block identification. The Llama-3.3-70B AWQ cases keep no weight_format (no verbatim config.json of
casperhansen/llama-3.3-70b-instruct-awq was found in the stored sources).
"""

from rooflab.units import WeightFormat

QWEN3_FP8_BLOCKS = WeightFormat.of("fp8_block", "the weight format")

CASES: tuple[dict, ...] = (
    # WanHaoRan/sglang hicache_eval/results/20260917_a100_gcp_32b70b_fp8kv/preflight/boot_32b/server.log
    dict(log="sglang-v0.5-qwen3-32b-fp8-a100-sxm-80gb-mem085-kvfp8e5m2-page64-ctx32768-hicache.log", engine="sglang",
         gpu_label="A100-SXM4-80GB (the repository's RUNBOOK.md)", model_label="Qwen/Qwen3-32B-FP8 (HiCache on)",
         gpu="a100-sxm-80gb", model="qwen3-32b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2",
                  "weight_format": QWEN3_FP8_BLOCKS}),
    # WanHaoRan/sglang hicache_eval/results/20260917_a100_gcp_32b70b_fp8kv/exp0_70b/server.log
    dict(log="sglang-v0.5-llama-3.3-70b-instruct-awq-a100-sxm-80gb-mem085-kvfp8e5m2-page64-ctx32768-hicache.log",
         engine="sglang", gpu_label="A100-SXM4-80GB (the repository's RUNBOOK.md)",
         model_label="casperhansen/llama-3.3-70b-instruct-awq (AWQ 4-bit, group size not printed; HiCache on)",
         gpu="a100-sxm-80gb", model="llama-3.3-70b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2"}),
    # WanHaoRan/sglang hicache_eval/results/20260917_a100_gcp_qwen8b/preflight/boot_default/server.log
    dict(log="sglang-v0.5-qwen3-8b-a100-sxm-80gb-mem085-page64-ctx32768-hicache.log", engine="sglang",
         gpu_label="A100-SXM4-80GB (the repository's RUNBOOK.md)", model_label="Qwen/Qwen3-8B (HiCache on)",
         gpu="a100-sxm-80gb", model="qwen3-8b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64}),
    # WanHaoRan/sglang agent_cache/results/20260922_081425_hbm_lru_NAT160/server.log (an H200, HiCache off)
    dict(log="sglang-v0.5-qwen3-30b-a3b-instruct-2507-h200-mem085-page64-ctx131072-maxreq64.log", engine="sglang",
         gpu_label="H200 (the log's MoE config path: device_name=NVIDIA_H200)",
         model_label="Qwen/Qwen3-30B-A3B-Instruct-2507 (bf16)", gpu="h200-sxm", model="qwen3-30b-a3b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 131072, "block_size": 64, "max_running_requests": 64}),
    # --- top-up (second freeze): see the top-up note below CASES' docstring and SOURCES-other.md "Top-up (second freeze)"
    # WanHaoRan/sglang agent_cache/results/20260918_192642_hbm_host_custom_L165536_H48/server.log (--max-total-tokens cap)
    dict(log="sglang-v0.5-qwen3-32b-fp8-a100-sxm-80gb-mem085-kvfp8e5m2-page64-ctx32768-maxreq64-maxtotaltokens-L1-H48-hicache.log",
         engine="sglang", gpu_label="A100-SXM4-80GB (the log's Marlin FP8 fallback; the repository's RUNBOOK.md)",
         model_label="Qwen/Qwen3-32B-FP8 (--max-total-tokens, level custom_L165536_H48; HiCache on)",
         gpu="a100-sxm-80gb", model="qwen3-32b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2",
                  "max_running_requests": 64, "max_total_tokens": 65536, "weight_format": QWEN3_FP8_BLOCKS}),
    # WanHaoRan/sglang agent_cache/results/20260918_190823_hbm_host_PH/server.log (--max-total-tokens cap)
    dict(log="sglang-v0.5-qwen3-32b-fp8-a100-sxm-80gb-mem085-kvfp8e5m2-page64-ctx32768-maxreq64-maxtotaltokens-PH-hicache.log",
         engine="sglang", gpu_label="A100-SXM4-80GB (the log's Marlin FP8 fallback; the repository's RUNBOOK.md)",
         model_label="Qwen/Qwen3-32B-FP8 (--max-total-tokens, level PH; HiCache on)",
         gpu="a100-sxm-80gb", model="qwen3-32b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2",
                  "max_running_requests": 64, "max_total_tokens": 131072, "weight_format": QWEN3_FP8_BLOCKS}),
    # WanHaoRan/sglang agent_cache/results/20260918_185203_hbm_host_P0/server.log (--max-total-tokens cap)
    dict(log="sglang-v0.5-qwen3-32b-fp8-a100-sxm-80gb-mem085-kvfp8e5m2-page64-ctx32768-maxreq64-maxtotaltokens-P0-hicache.log",
         engine="sglang", gpu_label="A100-SXM4-80GB (the log's Marlin FP8 fallback; the repository's RUNBOOK.md)",
         model_label="Qwen/Qwen3-32B-FP8 (--max-total-tokens, level P0; HiCache on)",
         gpu="a100-sxm-80gb", model="qwen3-32b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2",
                  "max_running_requests": 64, "max_total_tokens": 262144, "weight_format": QWEN3_FP8_BLOCKS}),
    # WanHaoRan/sglang hicache_eval/results/20260907_203035/file_backend_reference/exp0/server.log (H100 PCIe campaign)
    dict(log="sglang-v0.5-qwen3-8b-h100-pcie-mem085-page64-ctx32768-hicache.log", engine="sglang",
         gpu_label="H100 PCIe 80 GB (the run folder's REPORT.md)", model_label="Qwen/Qwen3-8B (HiCache on, file backend)",
         gpu="h100-pcie", model="qwen3-8b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64}),
    # WanHaoRan/sglang hicache_eval/results/20260908_llama70b_awq_fp8kv/exp0_32b/server.log (H100 PCIe campaign)
    dict(log="sglang-v0.5-qwen3-32b-fp8-h100-pcie-mem085-kvfp8e5m2-page64-ctx32768-hicache.log", engine="sglang",
         gpu_label="H100 PCIe 80 GB (the run folder's REPORT.md)", model_label="Qwen/Qwen3-32B-FP8 (native FP8; HiCache on)",
         gpu="h100-pcie", model="qwen3-32b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2",
                  "weight_format": QWEN3_FP8_BLOCKS}),
    # WanHaoRan/sglang hicache_eval/results/20260908_llama70b_awq_fp8kv/exp0_70b/server.log (H100 PCIe campaign)
    dict(log="sglang-v0.5-llama-3.3-70b-instruct-awq-h100-pcie-mem085-kvfp8e5m2-page64-ctx32768-hicache.log",
         engine="sglang", gpu_label="H100 PCIe 80 GB (the run folder's REPORT.md)",
         model_label="casperhansen/llama-3.3-70b-instruct-awq (AWQ 4-bit, group size not printed; HiCache on)",
         gpu="h100-pcie", model="llama-3.3-70b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2"}),
    # WanHaoRan/sglang hicache_eval/results/20260921_h200_nebius_32b70b_fp8kv/exp0_32b/server.log (H200 campaign)
    dict(log="sglang-v0.5-qwen3-32b-fp8-h200-mem085-kvfp8e5m2-page64-ctx32768-hicache.log", engine="sglang",
         gpu_label="H200 (the run folder's versions.txt: 'NVIDIA H200 (143,771 MiB, SM90)')",
         model_label="Qwen/Qwen3-32B-FP8 (native FP8; HiCache on)", gpu="h200-sxm", model="qwen3-32b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2",
                  "weight_format": QWEN3_FP8_BLOCKS}),
    # WanHaoRan/sglang hicache_eval/results/20260921_h200_nebius_32b70b_fp8kv/exp0_70b/server.log (H200 campaign)
    dict(log="sglang-v0.5-llama-3.3-70b-instruct-awq-h200-mem085-kvfp8e5m2-page64-ctx32768-hicache.log", engine="sglang",
         gpu_label="H200 (the run folder's versions.txt: 'NVIDIA H200 (143,771 MiB, SM90)')",
         model_label="casperhansen/llama-3.3-70b-instruct-awq (AWQ 4-bit, group size not printed; HiCache on)",
         gpu="h200-sxm", model="llama-3.3-70b", version="v0.5",
         options={"utilization": 0.85, "max_model_len": 32768, "block_size": 64, "kv_cache_dtype": "fp8_e5m2"}),
)
