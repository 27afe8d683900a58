"""A deployment: how a model is laid over GPUs, and in which formats. One frozen value, passed whole.

Every answer that depends on how a model is served (capacity, the whole-model step, report, explain, the
charts, the engine models) takes a `Deployment` instead of a dozen loose parameters. Its fields, with the
engines' own option names (vLLM: `vllm serve --help`; SGLang: `python -m sglang.launch_server --help`):

| field | type, unit | default | vLLM | SGLang |
| --- | --- | --- | --- | --- |
| tensor_parallel | GPUs | 1 | --tensor-parallel-size, -tp | --tp-size, --tp |
| pipeline_parallel | GPUs (stages) | 1 | --pipeline-parallel-size, -pp | --pp-size |
| data_parallel | replicas | 1 | --data-parallel-size, -dp | --dp-size (without --enable-dp-attention) |
| attention_data_parallel | ways, inside TP | 1 | (none) | --enable-dp-attention with --dp-size N |
| expert_parallel | GPUs an expert layer spans | 1 | --enable-expert-parallel (EP = TP x PCP x DP) | --ep-size, --ep |
| decode_context_parallel | ways, inside TP | 1 | --decode-context-parallel-size, -dcp | --dcp-size |
| prefill_context_parallel | GPUs | 1 | --prefill-context-parallel-size, -pcp | (none) |
| kv_parallel | GPUs | 1 | (none: Helix's KV parallelism; rooflab 0.1's `--dcp`) | (none) |
| page_size | tokens | 16 | --block-size | --page-size |
| kv_cache_dtype | DType or None | None = auto | --kv-cache-dtype | --kv-cache-dtype |
| mla_sparse_fp8 | bool | False | --kv-cache-dtype fp8_ds_mla (MLA: 656 bytes a token a layer) | (none) |
| dtype | DType or None | None = auto | --dtype | --dtype |
| weight_format | DType, WeightFormat or None | None = as shipped | --quantization | --quantization |
| gemm_dtype | DType or None | None = the weights' | (follows --quantization) | (follows --quantization) |
| gpu_memory_utilization | fraction in (0, 1] | 0.9 | --gpu-memory-utilization | --mem-fraction-static |
| window_allocation | WindowAllocation | hybrid | hybrid KV cache manager (on unless --disable-hybrid-kv-cache-manager) | (its SWA pool) |
| speculative | Speculative or None | None = no drafting | --speculative-config '{"method": ..., "num_speculative_tokens": k}' | --speculative-algorithm, --speculative-num-draft-tokens (k + 1) |
| cuda_graphs | bool | True | off with --enforce-eager | off with --disable-cuda-graph |
| fused_elementwise | bool or None | None = fused | torch.compile's fusions, or eager its CUDA custom ops (fused_add_rms_norm, silu_and_mul) | its fused add-RMSNorm and SiLU-and-mul kernels |

Both engines fuse with or without CUDA graphs: vLLM's --enforce-eager turns torch.compile off, and with it the
custom ops' default flips from 'none' to 'all' (vllm/config/vllm.py:1444-1451 at v0.29.0; custom_op.py:296
default_on), so add-RMSNorm and SiLU-and-mul run as its fused CUDA kernels; SGLang's --disable-cuda-graph keeps its
sgl-kernel ones. `fused_elementwise` False is rooflab's own torch reference layer (nine small launches a layer: two RMSNorms, two
residual adds, SiLU x up, the q copy and two KV appends), which the bundled measured step (measurements/
h200x2-step.csv) ran, in a graph: `Deployment(fused_elementwise=False)`.

A `Speculative` is the drafting: `method` (SpecMethod: mtp, eagle, eagle3, draft_model, ngram; the engines'
spellings deepseek_mtp, nextn, standalone are read as their names), `num_speculative_tokens` k (vLLM's key; SGLang's
--speculative-num-draft-tokens counts the verified tokens, k + 1, with --speculative-eagle-topk 1), the
per-position acceptance rate a in [0, 1) (tokens per step (1 - a^(k+1)) / (1 - a); Leviathan et al., "Fast
Inference from Transformers via Speculative Decoding", arXiv 2211.17192, section 3.1, eq. 1, with a the
per-position acceptance), and `draft_model` (a bundled model name: the draft's decode steps are that model's;
required for draft_model, refused otherwise).

How the degrees combine, as the engines define them (vLLM's `vllm/config/parallel.py`: `ParallelConfig`'s
validator, its field docs and `world_size_across_dp`, on the main branch at commit 00193b8, 2026; SGLang's
`server_args.py`, v0.5):

    GPUs (world)       TP x PCP x PP x DP x KVP        DCP and attention DP reuse the TP group's GPUs
    PCP > 1            DP must be 1 (vLLM: "PCP does not support data parallelism yet");
                       DCP in {1, PCP, TP x PCP}
    PCP = 1            TP % DCP == 0 (DCP reuses the TP ranks)
    DCP <= TP / H_kv   DCP shards by position the KV that TP would otherwise replicate: it needs TP to
                       replicate each KV head at least DCP times (MLA: H_kv = 1, so DCP <= TP)
    attention DP       divides TP (SGLang: --dp must divide --tp with --enable-dp-attention)
    EP                 divides TP x PCP x DP (vLLM sets it to exactly that; SGLang's --ep-size divides --tp)

KV parallelism (Helix, arXiv 2507.07120, "KV parallelism") is the other way to split a sequence's KV by
position: KVP groups of TP GPUs, each holding a full copy of the TP shard of the weights and 1/KVP of every
sequence's KV. It widens the world. rooflab 0.1 called it `--dcp`; that name now means the engines' DCP.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Union

from .cost.common import real_number, whole_number
from .errors import InputError, shown
from .limits import MAX_GPUS, MAX_PAGE_SIZE
from .specs import ModelSpec
from .units import DType, WeightFormat
from .vocab import WindowAllocation, _Named


class SpecMethod(_Named):
    """How draft tokens are made: an MTP head or an EAGLE head (one decoder layer of the target's width), a separate
    draft model, or n-gram lookup in the prompt (host-side, no GPU work priced)."""

    mtp = "mtp"
    eagle = "eagle"
    eagle3 = "eagle3"
    draft_model = "draft_model"
    ngram = "ngram"


#: The engines' other spellings of a method (vLLM: deepseek_mtp, qwen3_next_mtp ...; SGLang: NEXTN, STANDALONE).
SPEC_ALIASES = {"deepseek_mtp": "mtp", "nextn": "mtp", "standalone": "draft_model", "draft": "draft_model",
                "eagle-3": "eagle3"}


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding as deployed (the module docstring): method, k draft tokens, acceptance a, draft model."""

    method: SpecMethod
    num_speculative_tokens: int
    acceptance_rate: float = 0.7
    draft_model: Optional[str] = None

    def __post_init__(self) -> None:
        method = self.method
        if isinstance(method, str) and not isinstance(method, SpecMethod):
            method = SPEC_ALIASES.get(method.lower(), method.lower())
            if method.endswith("_mtp"):
                method = "mtp"
        object.__setattr__(self, "method", SpecMethod.of(method, "speculative method"))
        object.__setattr__(self, "num_speculative_tokens", whole_number(
            self.num_speculative_tokens, "num_speculative_tokens (--speculative-config)", maximum=64))
        a = real_number(self.acceptance_rate, "acceptance rate (--acceptance-rate)", 0, 1)
        if a >= 1:
            raise InputError(f"acceptance rate (--acceptance-rate) must be below 1 (every draft accepted has no "
                             f"finite (1 - a^(k+1)) / (1 - a) form worth pricing), got {a}")
        object.__setattr__(self, "acceptance_rate", a)
        if self.method is SpecMethod.draft_model and not self.draft_model:
            raise InputError("speculative method draft_model needs the draft model's name (\"model\" in "
                             "--speculative-config, --speculative-draft-model-path)")
        if self.method is not SpecMethod.draft_model and self.draft_model:
            raise InputError(f"a draft model ({self.draft_model}) is for method draft_model, not {self.method.value}")

    @property
    def query_tokens(self) -> int:
        """Tokens a sequence's verify step scores: the k drafts and the one after them."""
        return self.num_speculative_tokens + 1

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a verify step emits: sum_{i=0..k} a^i = (1 - a^(k+1)) / (1 - a)."""
        a, k = self.acceptance_rate, self.num_speculative_tokens
        return (1 - a ** (k + 1)) / (1 - a)

    @classmethod
    def of_config(cls, text: str, acceptance_rate: float = 0.7) -> "Speculative":
        """vLLM's --speculative-config JSON: {"method": ..., "num_speculative_tokens": k[, "model": name]}."""
        import json

        try:
            cfg = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise InputError(f"--speculative-config must be JSON, got {shown(text)}: {exc}") from None
        if not isinstance(cfg, dict) or "num_speculative_tokens" not in cfg:
            raise InputError(f"--speculative-config needs \"num_speculative_tokens\", got {shown(text)}")
        method = cfg.get("method") or ("draft_model" if cfg.get("model") else None)
        if method is None:
            raise InputError(f"--speculative-config needs \"method\" (or a draft \"model\"), got {shown(text)}")
        draft = cfg.get("model") if SPEC_ALIASES.get(str(method).lower(), method) == "draft_model" else None
        return cls(method, cfg["num_speculative_tokens"], acceptance_rate, draft)

#: Each degree's name and the option a user knows it by (errors name both).
DEGREES = {
    "tensor_parallel": "tensor parallel size (--tp)",
    "pipeline_parallel": "pipeline parallel size (--pp)",
    "data_parallel": "data parallel size (--dp)",
    "attention_data_parallel": "data-parallel attention size (--enable-dp-attention --dp)",
    "expert_parallel": "expert parallel size (--ep)",
    "decode_context_parallel": "decode context parallel size (--dcp)",
    "prefill_context_parallel": "prefill context parallel size (--pcp)",
    "kv_parallel": "KV parallel size (--kv-parallel)",
}


@dataclass(frozen=True)
class Deployment:
    """How a model is served: parallelism degrees, formats, paging and memory (the module docstring's table).

    Checked on construction: every degree a whole number in [1, 4096], the engines' combination rules (those
    that need no model); `check_model` adds the rules that need the model's heads and experts.
    """

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    attention_data_parallel: int = 1
    expert_parallel: int = 1
    decode_context_parallel: int = 1
    prefill_context_parallel: int = 1
    kv_parallel: int = 1
    page_size: int = 16
    kv_cache_dtype: Optional[DType] = None
    dtype: Optional[DType] = None
    weight_format: Union[DType, WeightFormat, None] = None
    gemm_dtype: Optional[DType] = None
    gpu_memory_utilization: float = 0.9
    window_allocation: WindowAllocation = WindowAllocation.hybrid
    speculative: Optional[Speculative] = None
    cuda_graphs: bool = True
    fused_elementwise: Optional[bool] = None
    mla_sparse_fp8: bool = False

    def __post_init__(self) -> None:
        for name, option in DEGREES.items():
            object.__setattr__(self, name, whole_number(getattr(self, name), option, maximum=MAX_GPUS))
        object.__setattr__(self, "page_size", whole_number(self.page_size, "page size (--page-size, --block-size)",
                                                           maximum=MAX_PAGE_SIZE))
        for name in ("kv_cache_dtype", "dtype", "gemm_dtype"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, DType.of(value, name))
        if self.weight_format is not None and not isinstance(self.weight_format, (DType, WeightFormat)):
            text = self.weight_format
            fmt = DType(text) if isinstance(text, str) and text in DType._value2member_map_ else WeightFormat.of(text)
            object.__setattr__(self, "weight_format", fmt)
        object.__setattr__(self, "gpu_memory_utilization", real_number(
            self.gpu_memory_utilization, "GPU memory utilisation (--gpu-memory-utilization)", 0, 1, lo_open=True))
        object.__setattr__(self, "window_allocation", WindowAllocation.of(self.window_allocation,
                                                                          "window_allocation"))
        if self.speculative is not None and not isinstance(self.speculative, Speculative):
            raise InputError(f"speculative must be a rooflab.deployment.Speculative, got {shown(self.speculative)}")
        for name in ("cuda_graphs", "fused_elementwise", "mla_sparse_fp8"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (name == "fused_elementwise" and value is None):
                raise InputError(f"{name} must be True or False, got {shown(value)}")
        if self.mla_sparse_fp8:        # vLLM's fp8_ds_mla: an fp8 e4m3 latent with its own scales (kvcache.py)
            if self.kv_cache_dtype not in (None, DType.fp8_e4m3):
                raise InputError(f"mla_sparse_fp8 (--kv-cache-dtype fp8_ds_mla) stores the MLA latent in fp8_e4m3; "
                                 f"kv_cache_dtype {self.kv_cache_dtype.value} contradicts it")
            object.__setattr__(self, "kv_cache_dtype", DType.fp8_e4m3)
        problem = self._rule_broken()
        if problem:
            raise InputError(problem)
        if self.num_gpus > MAX_GPUS:
            raise InputError(f"the deployment spans {self.num_gpus:,} GPUs (TP x PCP x PP x DP x KVP); "
                             f"rooflab plans at most {MAX_GPUS:,}")

    # --- the engines' rules ----------------------------------------------------------------------------

    def _rule_broken(self) -> Optional[str]:
        tp, pcp, dcp = self.tensor_parallel, self.prefill_context_parallel, self.decode_context_parallel
        if pcp > 1 and self.data_parallel > 1:
            return (f"--pcp {pcp} with --dp {self.data_parallel}: vLLM refuses prefill context parallelism with "
                    f"data parallelism (\"PCP does not support data parallelism yet\")")
        if pcp == 1 and tp % dcp:
            return (f"--dcp {dcp} must divide --tp {tp}: decode context parallelism reuses the tensor-parallel "
                    f"GPUs (vLLM: tp_size must be divisible by dcp_size); for a KV split over extra GPUs "
                    f"use --kv-parallel {dcp}")
        if pcp > 1 and dcp not in (1, pcp, tp * pcp):
            return (f"--dcp {dcp} with --pcp {pcp}: vLLM allows DCP 1, PCP ({pcp}) or TP x PCP ({tp * pcp}) "
                    f"when prefill context parallelism is on")
        if tp % self.attention_data_parallel:
            return (f"--enable-dp-attention --dp {self.attention_data_parallel} must divide --tp {tp}: "
                    f"data-parallel attention splits the tensor-parallel group (SGLang)")
        if self.attention_data_parallel > 1 and self.data_parallel > 1:
            return ("--data-parallel-size replicates the whole model and --enable-dp-attention splits attention "
                    "inside one TP group: give one of them")
        group = tp * pcp * self.data_parallel
        if group % self.expert_parallel:
            return (f"--ep {self.expert_parallel} must divide TP x PCP x DP = {group}: an expert layer spans "
                    f"those GPUs (vLLM's --enable-expert-parallel makes EP exactly that)")
        if dcp > 1 and self.kv_parallel > 1:
            return "--dcp and --kv-parallel both split each sequence's KV by position: give one of them"
        return None

    def check_model(self, model: ModelSpec) -> "Deployment":
        """This deployment, if the model allows it: TP splits every layer type's heads and every linear layer's
        state widths (LayerType.state_split_error: the engines' divide() asserts), DCP <= TP / H_kv for every
        softmax layer type, EP at most the routed experts (and only for a MoE
        model). InputError naming the rule."""
        if not isinstance(model, ModelSpec):
            raise InputError(f"model must be a ModelSpec (rooflab.load_model), got {shown(model)}")
        tp, dcp = self.tensor_parallel, self.decode_context_parallel
        for name, layer in model.layer_types.items():
            if not layer.is_attention:
                problem = layer.state_split_error(tp, model.name)
                if problem:
                    raise InputError(problem)
                continue
            heads = layer.heads(model.heads)
            kv_heads = 1 if layer.is_latent else heads.num_kv_heads
            if tp > 1:
                heads.shard(tp)                                 # names the sizes that split them
            if dcp > 1 and dcp * kv_heads > tp:
                raise InputError(f"--dcp {dcp} with --tp {tp}: {model.name}'s {name} layers have {kv_heads} KV "
                               f"head(s), so TP replicates each {max(1, tp // kv_heads)} time(s) and DCP can "
                               f"split at most that many ways (vLLM: DCP <= TP / H_kv); use --kv-parallel "
                               f"{dcp} to add GPUs instead")
        spec = self.speculative
        if spec is not None and spec.method is SpecMethod.mtp and not model.mtp_layers:
            raise InputError(f"speculative method mtp: {model.name} ships no multi-token-prediction layers "
                             "(ModelSpec.mtp_layers 0: its config has no num_nextn_predict_layers); vLLM refuses "
                             "it (vllm 0.11.0 config/speculative.py:218-233): give eagle, or a draft model")
        if self.expert_parallel > 1:
            if not model.is_moe:
                raise InputError(f"expert parallel size (--ep) {self.expert_parallel}: {model.name} has no routed "
                                 f"experts to split")
            if self.expert_parallel > model.num_experts:
                raise InputError(f"expert parallel size (--ep) {self.expert_parallel} exceeds the "
                                 f"{model.num_experts} routed experts of {model.name}: a GPU would hold none")
        return self

    # --- what follows from the degrees ---------------------------------------------------------------

    @property
    def num_gpus(self) -> int:
        """GPUs the deployment occupies: TP x PCP x PP x DP x KVP (DCP and attention DP reuse TP's GPUs)."""
        return (self.tensor_parallel * self.prefill_context_parallel * self.pipeline_parallel
                * self.data_parallel * self.kv_parallel)

    @property
    def position_split(self) -> int:
        """Ways each sequence's KV is split by position on a GPU: DCP (inside TP) or KVP (extra GPUs)."""
        return self.decode_context_parallel * self.kv_parallel

    @property
    def attention_tensor_parallel(self) -> int:
        """Ways attention's heads are split: TP over the data-parallel attention degree."""
        return self.tensor_parallel // self.attention_data_parallel

    @property
    def fused(self) -> bool:
        """Whether elementwise work is fused: as given, else fused (the engines' kernels, with or without graphs)."""
        return True if self.fused_elementwise is None else self.fused_elementwise

    @property
    def data_ranks(self) -> int:
        """Ranks a step's sequences are spread over: vLLM's DP replicas or SGLang's data-parallel attention ranks."""
        return self.data_parallel * self.attention_data_parallel

    @property
    def expert_tensor_parallel(self) -> int:
        """Ways each routed expert's width is split: the expert group (TP x PCP x DP GPUs) over EP."""
        return self.tensor_parallel * self.prefill_context_parallel * self.data_parallel // self.expert_parallel

    @property
    def dp_attention(self) -> bool:
        """Whether attention runs data-parallel inside the TP group (SGLang's --enable-dp-attention)."""
        return self.attention_data_parallel > 1

    def replace(self, **changes) -> "Deployment":
        """A copy with `changes`, checked again."""
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """'TP 8, DCP 8 (8 GPUs)': the degrees above 1, and the GPU count; 'one GPU' with none."""
        short = {"tensor_parallel": "TP", "pipeline_parallel": "PP", "data_parallel": "DP",
                 "attention_data_parallel": "attention DP", "expert_parallel": "EP",
                 "decode_context_parallel": "DCP", "prefill_context_parallel": "PCP", "kv_parallel": "KVP"}
        parts = [f"{label} {getattr(self, name)}" for name, label in short.items() if getattr(self, name) > 1]
        gpus = self.num_gpus
        return f"{', '.join(parts)} ({gpus} GPU{'s' if gpus != 1 else ''})" if parts else "one GPU"

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Speculative):
                value = {"method": value.method.value, "num_speculative_tokens": value.num_speculative_tokens,
                         "acceptance_rate": value.acceptance_rate, "draft_model": value.draft_model}
            out[f.name] = value.value if hasattr(value, "value") else value
        out["num_gpus"] = self.num_gpus
        return out


def of(value: object = None, **kw) -> Deployment:
    """A Deployment as given, or built from keyword arguments (None: the defaults)."""
    if isinstance(value, Deployment):
        return dataclasses.replace(value, **kw) if kw else value
    if value is not None:
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(value)}")
    return Deployment(**kw)


__all__ = ["DEGREES", "Deployment", "SPEC_ALIASES", "SpecMethod", "Speculative"]
