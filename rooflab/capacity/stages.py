"""Pipeline parallelism: a model's layers split over stages, and what each stage's GPUs hold.

Layers per stage (`partition`), as each engine's get_pp_indices splits L layers over P stages:

    vllm        floor(L / P) each, the r = L mod P left over going one each to stages P-2, P-3, ..., P-1-r (the
                last stage keeps the final norm, the first the embedding): vLLM from v0.8.0 (PR #13839, commit
                145944cb94a6fc663c05451763315d45e771a285; vllm/distributed/utils.py at
                abf61aaa8ef2facaf82bc8fd3a9fb545ccf14b3d)
    vllm-v0.7   floor(L / P) each, the last stage also takes the r left over: vLLM v0.5.1 (PR #4412) - v0.7.3
                (the same function before PR #13839)
    sglang      floor(L / P) each, the last r stages one more (sgl-project/sglang
                python/sglang/srt/distributed/utils.py get_pp_indices, commit 1107be11)

VLLM_PP_LAYER_PARTITION / SGLANG_PP_LAYER_PARTITION ("40,40") replace the rule with explicit counts
(--pp-layer-partition); they must sum to L, one count a stage.

What a stage's GPUs hold (vllm/model_executor/models/llama.py at abf61aaa: embed_tokens exists on the first rank,
and on the last when the embeddings are tied, since the LM head reuses them; the final norm and lm_head on the
last rank only; each decoder layer on the stage make_layers assigns it):

    embeddings  1 on the first stage; 1 on the last too if tied (P > 1)
    lm_head     1 on the last stage
    attention   the stage's layers' share of each layer type's attention parameters
    dense_mlp   the stage's dense layers / all dense layers; experts, shared experts, router: its MoE layers' share
    norms       (2 H n + H on the last stage) / (2 H L + H)

The KV cache of a stage covers its own layers only (`layers_model`). Tensor parallelism splits each stage as it
splits the whole model.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from fractions import Fraction

from ..cost.checks import whole_number
from ..errors import InputError, shown
from ..specs import ModelSpec
from ..specs.weights import WeightComponent


class LayerPartition(str, enum.Enum):
    """How an engine splits the layers over pipeline stages when no explicit partition is given."""

    vllm = "vllm"
    vllm_v0_7 = "vllm-v0.7"
    sglang = "sglang"


def partition(num_layers: int, pipeline_parallel: int, rule: LayerPartition,
              explicit: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """Layers per stage, first stage first (module docstring); `explicit` is --pp-layer-partition."""
    pp = pipeline_parallel
    if explicit is not None:
        counts = check_partition(explicit)
        if len(counts) != pp:
            raise InputError(f"--pp-layer-partition {','.join(map(str, counts))} gives {len(counts)} stages; "
                             f"--pp is {pp} (the engines refuse: 'len(partitions)=... does not match pp_size')")
        if sum(counts) != num_layers:
            raise InputError(f"--pp-layer-partition {','.join(map(str, counts))} sums to {sum(counts)} layers; the "
                             f"model has {num_layers} (the engines refuse: 'sum(partitions)=... does not match')")
        if min(counts) < 1:
            raise InputError(f"--pp-layer-partition {','.join(map(str, counts))}: every stage needs a layer here")
        return counts
    if pp > num_layers:
        raise InputError(f"--pp {pp} is more stages than the model's {num_layers} layers")
    base, extra = divmod(num_layers, pp)
    counts = [base] * pp
    if rule is LayerPartition.vllm:
        for i in range(2, extra + 2):
            counts[-i] += 1
    elif rule is LayerPartition.vllm_v0_7:
        counts[-1] += extra
    else:
        for i in range(pp - extra, pp):
            counts[i] += 1
    return tuple(counts)


#: Most stages an explicit partition may list (more than any model has layers).
MAX_STAGES = 4096


def check_partition(value: object, what: str = "pp_layer_partition (--pp-layer-partition)") -> tuple[int, ...]:
    """An explicit partition as a tuple of layer counts: a list, tuple or 1-d array of whole numbers; anything else
    (True, nan, a NumPy scalar, a 0-d array, text) is an InputError naming `what` (partition checks the counts
    against --pp and the model)."""
    if isinstance(value, (str, bytes)) or not (isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) == 1):
        raise InputError(f"{what} must be a sequence of layer counts, one a stage (e.g. (40, 40)), got {shown(value)}")
    if len(value) > MAX_STAGES:
        raise InputError(f"{what} lists {len(value):,} stages; at most {MAX_STAGES:,}")
    return tuple(whole_number(n, f"{what} entry", minimum=0) for n in value)


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: layers [start, end) of a model split over `pipeline_parallel` stages."""

    index: int
    start: int
    end: int
    pipeline_parallel: int

    @property
    def first(self) -> bool:
        return self.index == 0

    @property
    def last(self) -> bool:
        return self.index == self.pipeline_parallel - 1

    @property
    def num_layers(self) -> int:
        return self.end - self.start

    def describe(self) -> str:
        """'stage 1 of 2 (layers 40-79, LM head)'."""
        ends = [what for what, held in (("embedding", self.first), ("LM head", self.last)) if held]
        return (f"stage {self.index} of {self.pipeline_parallel} (layers {self.start}-{self.end - 1}"
                + "".join(f", {e}" for e in ends) + ")")

    def layers_model(self, model: ModelSpec) -> ModelSpec:
        """`model` cut to this stage's layers, for what scales with layers (the KV cache, states, the per-token
        activations); its weights are not the stage's: stage_weight_bytes counts those."""
        if self.pipeline_parallel == 1:
            return model
        names = model.layer_type_names[self.start:self.end]
        kept = {n: t for n, t in model.layer_types.items() if n in names}
        if all(not t.is_attention for t in kept.values()):
            raise InputError(f"{model.name}: pipeline {self.describe()} holds only linear-attention layers; "
                             "not modelled")
        cut = dict(num_layers=self.num_layers, first_layers=tuple(names), layer_pattern=tuple(dict.fromkeys(names)),
                   layer_types=kept, first_dense_layers=max(0, model.first_dense_layers - self.start),
                   num_parameters=None)
        if model.is_moe and not any(model.is_moe_layer(i) for i in range(self.start, self.end)):
            cut.update(_dense_only(model))
        return dataclasses.replace(model, **cut)

    def shares(self, model: ModelSpec) -> dict[str, Fraction]:
        """{component: the fraction of it this stage holds} (module docstring), for specs.weights.weight_bytes."""
        if self.pipeline_parallel == 1:
            return {}
        own = range(self.start, self.end)
        counts = {name: model.layer_type_names[self.start:self.end].count(name) for name in model.layer_types}
        totals = model.layer_counts
        by_type = dict(model.parameters.attention_by_type)
        attention_all = sum(by_type.values())
        attention = sum(Fraction(by_type[n] * counts[n], totals[n]) for n in totals if totals[n]) if attention_all \
            else Fraction(0)
        moe = sum(model.is_moe_layer(i) for i in own)
        dense = self.num_layers - moe
        h = model.hidden_size
        tied_head = model.tie_word_embeddings and self.last
        c = WeightComponent
        return {
            c.embeddings: Fraction(1 if self.first or tied_head else 0),
            c.lm_head: Fraction(1 if self.last else 0),
            c.attention: attention / attention_all if attention_all else Fraction(0),
            c.dense_mlp: Fraction(dense, model.num_dense_layers) if model.num_dense_layers else Fraction(0),
            c.experts: _share(moe, model.num_moe_layers), c.shared_experts: _share(moe, model.num_moe_layers),
            c.router: _share(moe, model.num_moe_layers),
            c.norms: Fraction(2 * h * self.num_layers + (h if self.last else 0), 2 * h * model.num_layers + h),
        }


def _dense_only(model: ModelSpec) -> dict:
    """The fields that make a MoE model's stage of only dense layers a dense model: no experts, the dense layers'
    MLP size as ffn_size. vLLM builds such a stage from its own layers alone (get_pp_indices and make_layers: the
    stage's decoder layers are dense, its MoE layers PPMissingLayer), so it holds and runs no experts; the
    quantization formats of components it lacks and their kept parameters go with them."""
    quantization = {k: v for k, v in model.quantization.items() if k not in ("experts", "shared_experts")}
    kept = {k: v for k, v in model.unquantized_parameters.items() if k not in ("experts", "shared_experts")}
    return dict(num_experts=1, num_experts_per_token=1, first_dense_layers=0, moe_layer_step=1,
                ffn_size=model.dense_ffn_size or model.ffn_size, dense_ffn_size=None, num_shared_experts=0,
                shared_expert_ffn_size=None, expert_groups=1, topk_groups=1, quantization=quantization,
                unquantized_parameters=kept)


def _share(n: int, total: int) -> Fraction:
    return Fraction(n, total) if total else Fraction(0)


def pipeline_stages(model: ModelSpec, pipeline_parallel: int, rule: LayerPartition = LayerPartition.vllm,
                    explicit: tuple[int, ...] | None = None) -> tuple[Stage, ...]:
    """The stages of `model` over `pipeline_parallel` stages (module docstring); one stage when it is 1."""
    if pipeline_parallel > 1 and model.vision_parameters:
        raise InputError(f"{model.name}: pipeline parallelism with a vision tower is not modelled (where its "
                         "encoder's weights live depends on the model's code)")
    counts = partition(model.num_layers, pipeline_parallel, rule, explicit) if pipeline_parallel > 1 \
        else (model.num_layers,)
    stages, start = [], 0
    for i, n in enumerate(counts):
        stages.append(Stage(i, start, start + n, pipeline_parallel))
        start += n
    return tuple(stages)


def parse_partition(text: str | None) -> tuple[int, ...] | None:
    """--pp-layer-partition '40,40' -> (40, 40); None when not given."""
    if text is None:
        return None
    try:
        counts = tuple(int(part) for part in str(text).split(","))
    except ValueError:
        raise InputError(f"--pp-layer-partition '{text}': give whole layer counts separated by commas, "
                         "one a stage (40,40)") from None
    return counts


__all__ = ["LayerPartition", "Stage", "check_partition", "parse_partition", "partition", "pipeline_stages"]
