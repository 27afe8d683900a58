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
| dtype | DType or None | None = auto | --dtype | --dtype |
| weight_format | DType, WeightFormat or None | None = as shipped | --quantization | --quantization |
| gemm_dtype | DType or None | None = the weights' | (follows --quantization) | (follows --quantization) |
| gpu_memory_utilization | fraction in (0, 1] | 0.9 | --gpu-memory-utilization | --mem-fraction-static |
| window_allocation | WindowAllocation | hybrid | hybrid KV cache manager (on unless --disable-hybrid-kv-cache-manager) | (its SWA pool) |

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
from .vocab import LayerKind, WindowAllocation

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
        """This deployment, if the model allows it: TP splits every layer type's heads, DCP <= TP / H_kv for every
        softmax layer type, EP at most the routed experts (and only for a MoE model). InputError naming the rule."""
        if not isinstance(model, ModelSpec):
            raise InputError(f"model must be a ModelSpec (rooflab.load_model), got {shown(model)}")
        tp, dcp = self.tensor_parallel, self.decode_context_parallel
        for name, layer in model.layer_types.items():
            if layer.kind is LayerKind.linear:
                continue
            heads = layer.heads(model.heads)
            kv_heads = 1 if layer.kind is LayerKind.mla else heads.num_kv_heads
            if tp > 1:
                heads.shard(tp)                                 # names the sizes that split them
            if dcp > 1 and dcp * kv_heads > tp:
                raise InputError(f"--dcp {dcp} with --tp {tp}: {model.name}'s {name} layers have {kv_heads} KV "
                               f"head(s), so TP replicates each {max(1, tp // kv_heads)} time(s) and DCP can "
                               f"split at most that many ways (vLLM: DCP <= TP / H_kv); use --kv-parallel "
                               f"{dcp} to add GPUs instead")
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
    def dp_attention(self) -> bool:
        """Whether attention runs data-parallel inside the TP group (SGLang's --enable-dp-attention)."""
        return self.attention_data_parallel > 1

    def replace(self, **changes) -> "Deployment":
        """A copy with `changes`, checked again."""
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """'TP 8, DCP 8 (8 GPUs)': the degrees above 1, and the GPU count."""
        short = {"tensor_parallel": "TP", "pipeline_parallel": "PP", "data_parallel": "DP",
                 "attention_data_parallel": "attention DP", "expert_parallel": "EP",
                 "decode_context_parallel": "DCP", "prefill_context_parallel": "PCP", "kv_parallel": "KVP"}
        parts = [f"{label} {getattr(self, name)}" for name, label in short.items() if getattr(self, name) > 1]
        gpus = self.num_gpus
        return f"{', '.join(parts) or 'one GPU'} ({gpus} GPU{'s' if gpus != 1 else ''})"

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
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


__all__ = ["DEGREES", "Deployment"]
