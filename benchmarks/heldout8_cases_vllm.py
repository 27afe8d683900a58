"""Held-out set 8's vllm cases (tests/data/engine_logs/heldout8/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction,
replay or parse was run on these logs.

Identifications that are not names (heldout8/SOURCES-vllm.md says so too): a checkpoint pre-quantized or quantized in
flight by bitsandbytes is the bundled spec of its architecture with the weights the printed bitsandbytes config names
(nf4 with double quantization: nf4_dq; fp4 without it: fp4), as sets 6 and 7 did; Unsloth's dynamic 4-bit checkpoints
('-unsloth-bnb-4bit') leave a few modules in 16 bits (each log's line 1 lists them), which no weight format states.
DeepSeek-R1-0528-Qwen3-8B (DeepSeek's distillation into Qwen3-8B, Qwen3ForCausalLM) is the bundled qwen3-8b, its
architecture, DeepSeek-R1-Distill-Llama-8B the bundled llama-3.1-8b, and a GRPO post-trained gemma-3-27b-it the
bundled gemma-3-27b; Qwen3-8B-FP8 is qwen3-8b with fp8_block weights (Qwen's FP8 release: 128 x 128 blocks), as set 6
did; Llama-3.2-1B-Instruct-FP8-Block is llama-3.2-1b with fp8_block weights; Qwen2.5-0.5B-Instruct is set 7's stored
config.json (heldout7/models/), Qwen2.5-1.5B-Instruct set 6's (heldout6/models/). GPUs: Tesla T4 is t4, NVIDIA L4
l4, NVIDIA A100-SXM4-40GB a100-40gb, NVIDIA A100-SXM4-80GB a100-sxm-80gb, NVIDIA GeForce RTX 4090 rtx-4090, RTX 3090
rtx-3090, GKE's a4-highgpu-8g b200. Unsloth's settings: its 'actual GPU utilization = X%' is the utilization, its
'Num Sequences' max_num_seqs, its 'Chunked prefill tokens' max_num_batched_tokens, the notebook's lora_rank (or the
printed engine arguments) max_lora_rank, LoRA on where the log prints 'Using PunicaWrapperGPU', as set 7 did for
Unsloth. Versions: 'v0' for V0 v0.7.1 to v0.10.0, 'v0.8' for V1 v0.8.5.post1 and v0.9.0, 'v1' for V1 v0.10.2 and
v0.11.2; "release" is the printed release (each inside its accounting's range, vocab.RELEASE_RANGE). Settings rooflab
has no field for are in each log's line 1 (prefix caching, swap space, Unsloth's 16-bit modules, NeMo RL's eight
engines on eight GPUs).
"""
from pathlib import Path

from rooflab.units import DType, WeightFormat

MODELS7 = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs" / "heldout7" / "models"
QWEN25_05B = str(MODELS7 / "qwen2.5-0.5b-instruct")
MODELS6 = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs" / "heldout6" / "models"
QWEN25_15B = str(MODELS6 / "qwen2.5-1.5b-instruct")

NF4_DQ = WeightFormat.of("nf4_dq", "the weight format")
FP4 = WeightFormat.of("fp4", "the weight format")
FP8_BLOCK = WeightFormat.of("fp8_block", "the weight format")
#: Unsloth's fp8 notebooks print the utilization they pass in full (0.8661508568217998; 'actual ... = 86.62%').
UNSLOTH_L4_UTIL = 0.8661508568217998

CASES: tuple[dict, ...] = (
    # GoogleCloudPlatform/kubernetes-engine-samples: NeMo RL's evaluation of a GRPO-trained Gemma 3 27B, 8 engines on A4
    dict(log="vllm-v1-0.11.2-gemma-3-27b-it-grpo-b200-util090-maxlen32768-nemo-rl-eval.log", engine="vllm",
         gpu_label="B200, one of 8 (a4-highgpu-8g, the folder's README)",
         model_label="google/gemma-3-27b-it, GRPO post-trained (NeMo RL), bf16", gpu="b200", model="gemma-3-27b",
         version="v1",
         options={"utilization": 0.9, "max_model_len": 32768, "max_num_batched_tokens": 16384, "dtype": DType.bf16,
                  "release": "0.11.2"}),
    # unslothai/notebooks: Unsloth's GRPO notebooks (fast_inference), one start-up a notebook version
    dict(log="vllm-v0-0.7.3-llama-3.1-8b-instruct-bnb4-t4-fp16-util059-maxlen1024-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4",
         model="llama-3.1-8b", version="v0",
         options={"utilization": 0.5943, "max_model_len": 1024, "max_num_seqs": 160, "max_num_batched_tokens": 1024,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.7.3"}),
    dict(log="vllm-v0-0.7.1-llama-3.1-8b-instruct-bnb4-t4-fp16-util060-maxlen512-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/meta-llama-3.1-8b-instruct-bnb-4bit (nf4, double quant), fp16", gpu="t4",
         model="llama-3.1-8b", version="v0",
         options={"utilization": 0.5959, "max_model_len": 512, "max_num_seqs": 160, "max_num_batched_tokens": 512,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.7.1"}),
    dict(log="vllm-v0-0.8.5.post1-mistral-7b-instruct-v0.3-bnb4-rtx4090-util059-maxlen1024-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="RTX 4090 (Unsloth banner)",
         model_label="unsloth/mistral-7b-instruct-v0.3-bnb-4bit (nf4, double quant), bf16", gpu="rtx-4090",
         model="mistral-7b", version="v0",
         options={"utilization": 0.5893, "max_model_len": 1024, "max_num_seqs": 224, "max_num_batched_tokens": 1024,
                  "dtype": DType.bf16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.8.5.post1"}),
    dict(log="vllm-v0-0.8.5.post1-mistral-7b-instruct-v0.3-bnb4-t4-fp16-util059-maxlen1024-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/mistral-7b-instruct-v0.3-bnb-4bit (nf4, double quant), fp16", gpu="t4",
         model="mistral-7b", version="v0",
         options={"utilization": 0.5943, "max_model_len": 1024, "max_num_seqs": 192, "max_num_batched_tokens": 1024,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.8.5.post1"}),
    dict(log="vllm-v0-0.8.5.post1-deepseek-r1-0528-qwen3-8b-bnb4fp4-t4-fp16-util069-maxlen256-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="Erland/DeepSeek-R1-0528-Qwen3-8B, bitsandbytes fp4 in flight, fp16", gpu="t4",
         model="qwen3-8b", version="v0",
         options={"utilization": 0.6934, "max_model_len": 256, "max_num_seqs": 128, "max_num_batched_tokens": 256,
                  "dtype": DType.fp16, "weight_format": FP4, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.8.5.post1"}),
    dict(log="vllm-v0.8-0.9.0-deepseek-r1-0528-qwen3-8b-bnb4fp4-a100-40gb-util069-maxlen2048-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="A100-SXM4-40GB (Unsloth banner)",
         model_label="Erland/DeepSeek-R1-0528-Qwen3-8B, bitsandbytes fp4 in flight, bf16", gpu="a100-40gb",
         model="qwen3-8b", version="v0.8",
         options={"utilization": 0.6919, "max_model_len": 2048, "max_num_seqs": 224, "max_num_batched_tokens": 2048,
                  "dtype": DType.bf16, "weight_format": FP4, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.9.0"}),
    dict(log="vllm-v0.8-0.8.5.post1-deepseek-r1-0528-qwen3-8b-bnb4fp4-rtx4090-util069-maxlen2048-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="RTX 4090, one of 2 visible (Unsloth banner)",
         model_label="Erland/DeepSeek-R1-0528-Qwen3-8B, bitsandbytes fp4 in flight, bf16", gpu="rtx-4090",
         model="qwen3-8b", version="v0.8",
         options={"utilization": 0.6875, "max_model_len": 2048, "max_num_seqs": 128, "max_num_batched_tokens": 2048,
                  "dtype": DType.bf16, "weight_format": FP4, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.8.5.post1"}),
    dict(log="vllm-v1-0.10.2-qwen3-8b-fp8-l4-util087-maxlen2048-lora32-unsloth-grpo.log", engine="vllm",
         gpu_label="NVIDIA L4 (Unsloth banner)", model_label="unsloth/Qwen3-8B-FP8 (block fp8), bf16", gpu="l4",
         model="qwen3-8b", version="v1",
         options={"utilization": UNSLOTH_L4_UTIL, "max_model_len": 2048, "max_num_seqs": 224,
                  "max_num_batched_tokens": 2048, "dtype": DType.bf16, "weight_format": FP8_BLOCK, "enable_lora": True,
                  "max_lora_rank": 32, "release": "0.10.2"}),
    dict(log="vllm-v1-0.11.2-llama-3.2-1b-instruct-fp8-block-l4-util087-maxlen2048-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="NVIDIA L4 (Unsloth banner)",
         model_label="unsloth/Llama-3.2-1B-Instruct-FP8-Block (compressed-tensors), bf16", gpu="l4",
         model="llama-3.2-1b", version="v1",
         options={"utilization": UNSLOTH_L4_UTIL, "max_model_len": 2048, "max_num_seqs": 288,
                  "max_num_batched_tokens": 2048, "dtype": DType.bf16, "weight_format": FP8_BLOCK, "enable_lora": True,
                  "max_lora_rank": 32, "release": "0.11.2"}),
    dict(log="vllm-v0-0.8.1-llama-3.2-3b-instruct-a100-40gb-bf16-util079-maxlen2048-lora64-unsloth-grpo.log",
         engine="vllm", gpu_label="A100-SXM4-40GB (Unsloth banner)", model_label="unsloth/Llama-3.2-3B-Instruct, bf16",
         gpu="a100-40gb", model="llama-3.2-3b", version="v0",
         options={"utilization": 0.7908, "max_model_len": 2048, "max_num_seqs": 320, "max_num_batched_tokens": 2048,
                  "dtype": DType.bf16, "enable_lora": True, "max_lora_rank": 64, "release": "0.8.1"}),
    dict(log="vllm-v0-0.8.5.post1-llama-3.2-3b-instruct-t4-fp16-util059-maxlen2048-lora64-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/Llama-3.2-3B-Instruct, fp16",
         gpu="t4", model="llama-3.2-3b", version="v0",
         options={"utilization": 0.5943, "max_model_len": 2048, "max_num_seqs": 160, "max_num_batched_tokens": 2048,
                  "dtype": DType.fp16, "enable_lora": True, "max_lora_rank": 64, "release": "0.8.5.post1"}),
    # datawhalechina/self-llm: the same Unsloth GRPO recipe on an A100 80GB
    dict(log="vllm-v0.8-0.8.5.post1-deepseek-r1-0528-qwen3-8b-bnb4fp4-a100-80gb-util070-maxlen1024-lora32-unsloth-grpo-self-llm.log",
         engine="vllm", gpu_label="A100-SXM4-80GB (Unsloth banner)",
         model_label="deepseek-ai/DeepSeek-R1-0528-Qwen3-8B, bitsandbytes fp4 in flight, bf16", gpu="a100-sxm-80gb",
         model="qwen3-8b", version="v0.8",
         options={"utilization": 0.696, "max_model_len": 1024, "max_num_seqs": 320, "max_num_batched_tokens": 1024,
                  "dtype": DType.bf16, "weight_format": FP4, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.8.5.post1"}),
    # johnson7788/RLDecisionAgent: OpenPipe ART's Unsloth backend on an RTX 3090
    dict(log="vllm-v0-0.10.0-qwen2.5-0.5b-instruct-dyn-bnb4-rtx3090-util078-maxlen32768-lora-unsloth-art.log",
         engine="vllm", gpu_label="RTX 3090 (Unsloth banner)",
         model_label="unsloth/qwen2.5-0.5b-instruct-unsloth-bnb-4bit (nf4, double quant, some modules 16-bit), bf16",
         gpu="rtx-3090", model=QWEN25_05B, version="v0",
         options={"utilization": 0.7799, "max_model_len": 32768, "max_num_seqs": 288, "max_num_batched_tokens": 32768,
                  "dtype": DType.bf16, "weight_format": NF4_DQ, "enable_lora": True, "release": "0.10.0"}),
    # basilenouvellet/unsloth-grpo-fine-tuning: a user's run of the Llama notebook edited to Qwen2.5-1.5B; no blocks
    dict(log="vllm-v0-0.7.2-qwen2.5-1.5b-instruct-dyn-bnb4-t4-fp16-util008-maxlen256-lora32-unsloth-grpo-no-blocks.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/qwen2.5-1.5b-instruct-unsloth-bnb-4bit (nf4, double quant, some modules 16-bit), fp16",
         gpu="t4", model=QWEN25_15B, version="v0",
         options={"utilization": 0.079, "max_model_len": 256, "max_num_seqs": 128, "max_num_batched_tokens": 256,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.7.2"}),
    # Freakz3z/ShiTongTian_LLM: a user's own run of Unsloth's Llama 3.1 (8B) GRPO notebook
    dict(log="vllm-v0-0.7.3-llama-3.1-8b-instruct-dyn-bnb4-t4-fp16-util060-maxlen512-lora32-unsloth-grpo-user-run.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4",
         model="llama-3.1-8b", version="v0",
         options={"utilization": 0.5959, "max_model_len": 512, "max_num_seqs": 160, "max_num_batched_tokens": 512,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.7.3"}),
    # Ryanrc03/Chasing-the-Aha-Moment: a user's own runs of Unsloth's Llama 3.1 (8B) GRPO notebook, two files
    dict(log="vllm-v0-0.9.2-llama-3.1-8b-instruct-dyn-bnb4-t4-fp16-util084-maxlen1024-lora32-unsloth-grpo-aha.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4",
         model="llama-3.1-8b", version="v0",
         options={"utilization": 0.842, "max_model_len": 1024, "max_num_seqs": 192, "max_num_batched_tokens": 1024,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.9.2"}),
    dict(log="vllm-v0-0.9.2-llama-3.1-8b-instruct-dyn-bnb4-t4-fp16-util089-maxlen1024-lora32-unsloth-grpo-aha.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4",
         model="llama-3.1-8b", version="v0",
         options={"utilization": 0.8915, "max_model_len": 1024, "max_num_seqs": 192, "max_num_batched_tokens": 1024,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.9.2"}),
    # Kang9779/deepseek-r1-ex: the Llama notebook edited to Qwen2.5-7B-Instruct, a user's run
    dict(log="vllm-v0-0.7.2-qwen2.5-7b-instruct-dyn-bnb4-t4-fp16-util060-maxlen512-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)",
         model_label="unsloth/qwen2.5-7b-instruct-unsloth-bnb-4bit (nf4, double quant, some modules 16-bit), fp16",
         gpu="t4", model="qwen2.5-7b", version="v0",
         options={"utilization": 0.5959, "max_model_len": 512, "max_num_seqs": 160, "max_num_batched_tokens": 512,
                  "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32,
                  "release": "0.7.2"}),
    # users' own runs of Unsloth's GRPO notebook (copies in their repositories), one a configuration
    dict(log="vllm-v0-0.7.2-llama-3.2-1b-instruct-dyn-bnb4-t4-fp16-util060-maxlen256-lora-unsloth-grpo-haiku.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/llama-3.2-1b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4", model="llama-3.2-1b",
         version="v0", options={"utilization": 0.5959, "max_model_len": 256, "max_num_seqs": 192, "max_num_batched_tokens": 256, "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "release": "0.7.2"}),
    dict(log="vllm-v0-0.8.4-llama-3.1-8b-instruct-dyn-bnb4-t4-fp16-util059-maxlen1024-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4", model="llama-3.1-8b",
         version="v0", options={"utilization": 0.5943, "max_model_len": 1024, "max_num_seqs": 160, "max_num_batched_tokens": 1024, "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32, "release": "0.8.4"}),
    dict(log="vllm-v0-0.8.2-llama-3.1-8b-instruct-dyn-bnb4-t4-fp16-util059-maxlen1024-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4", model="llama-3.1-8b",
         version="v0", options={"utilization": 0.5943, "max_model_len": 1024, "max_num_seqs": 160, "max_num_batched_tokens": 1024, "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32, "release": "0.8.2"}),
    dict(log="vllm-v1-0.10.2-llama-3.1-8b-instruct-dyn-bnb4-t4-fp16-util089-maxlen512-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4", model="llama-3.1-8b",
         version="v1", options={"utilization": 0.8915, "max_model_len": 512, "max_num_seqs": 192, "max_num_batched_tokens": 512, "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32, "release": "0.10.2"}),
    dict(log="vllm-v0-0.7.2-deepseek-r1-distill-llama-8b-dyn-bnb4-t4-fp16-util060-maxlen512-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/DeepSeek-R1-Distill-Llama-8B-unsloth-bnb-4bit (nf4, double quant), fp16", gpu="t4", model="llama-3.1-8b",
         version="v0", options={"utilization": 0.5959, "max_model_len": 512, "max_num_seqs": 160, "max_num_batched_tokens": 512, "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 32, "release": "0.7.2"}),
    dict(log="vllm-v0-0.8.4-qwen2.5-1.5b-instruct-t4-fp16-util059-maxlen1024-lora32-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/Qwen2.5-1.5B-Instruct, fp16", gpu="t4", model=QWEN25_15B,
         version="v0", options={"utilization": 0.5943, "max_model_len": 1024, "max_num_seqs": 192, "max_num_batched_tokens": 1024, "dtype": DType.fp16, "enable_lora": True, "max_lora_rank": 32, "release": "0.8.4"}),
    dict(log="vllm-v0-0.8.4-qwen2.5-1.5b-instruct-dyn-bnb4-t4-fp16-util059-maxlen1024-lora16-unsloth-grpo.log",
         engine="vllm", gpu_label="Tesla T4 (Unsloth banner)", model_label="unsloth/qwen2.5-1.5b-instruct-unsloth-bnb-4bit (nf4, double quant, some modules 16-bit), fp16", gpu="t4", model=QWEN25_15B,
         version="v0", options={"utilization": 0.5943, "max_model_len": 1024, "max_num_seqs": 192, "max_num_batched_tokens": 1024, "dtype": DType.fp16, "weight_format": NF4_DQ, "enable_lora": True, "max_lora_rank": 16, "release": "0.8.4"}),
)
