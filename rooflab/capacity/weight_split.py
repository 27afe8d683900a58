"""How SGLang lays a model's components over its TP group where it does not split them TP ways: the ways each is
split, for specs.weights.weight_bytes (`splits`).

Data-parallel attention (--enable-dp-attention --dp N under --tp T) runs attention N ways data-parallel inside the
TP group: each rank's attention TP group has T / N GPUs (python/sglang/srt/layers/dp_attention.py,
compute_dp_attention_world_info: attn_tp_size = tp_size // dp_size). What each component is split over, read from
python/sglang/srt/models/deepseek_v2.py (v0.5.10: also models/deepseek_common/) in each release's wheel (v0.4.3.post2,
v0.4.4, v0.4.5, v0.4.6, v0.4.6.post2, v0.4.7, v0.4.8, v0.4.10, v0.5.0rc0, v0.5.1, v0.5.3 - v0.5.10):

    component    split over   releases
    attention    T / N        v0.4.5 - v0.5.10: q_b, kv_b and o over the attention TP group (q_a and kv_a replicated
                              as under TP); v0.4.3.post2 - v0.4.4 set N = T (server_args.py: dp_size = tp_size) and
                              build every projection ReplicatedLinear (use_dp): whole, which T / N also gives
    embeddings   1 (whole)    v0.4.3.post2 - v0.5.7: VocabParallelEmbedding(enable_tp=not enable_dp_attention)
                 T / N        v0.5.8 - v0.5.10: VocabParallelEmbedding(use_attn_tp_group=True)
    lm_head      1 (whole)    v0.4.3.post2 - v0.4.4: ReplicatedLinear(hidden, vocab) under DP attention
                 T            v0.4.5 - v0.5.10: ParallelLMHead over the whole TP group (over T / N with
                              --enable-dp-lm-head from v0.4.7: no option here, not modelled)
    the rest     T            dense MLP layers (moe_dense_tp_size None, the default), shared and routed experts

A release before v0.4.3.post2 (not read) is taken as v0.4.3.post2; no release: the newest, v0.5.10. Other model
files are taken to follow deepseek_v2.py's layout: at v0.5.10 qwen2.py, qwen2_moe.py (whose model Qwen3-MoE's
qwen3_moe.py builds on) and gpt_oss.py do (the embedding over the attention TP group, the lm_head over TP); their
earlier releases were not read.

Shared-experts fusion, v0.4.6 - v0.4.6.x (deepseek_v2.py determine_n_share_experts_fusion): on compute capability
9.0 and newer, a DeepseekV3ForCausalLM with 256 routed experts (DeepSeek-V3, R1; rooflab knows the architecture by
that expert count and MLA) gets T copies of its shared expert cloned into the fused MoE layer, each split T ways
like the routed experts (load_weights: 'Cloning {n} replicas of the shared expert into MoE'): every GPU holds one
whole shared expert. v0.4.5 enables it only when asked (its n_share_experts_fusion default 0 is never None); from
v0.4.7 one copy is fused (num_fused_shared_experts = n_shared_experts), split T ways like the others. The gate is
DeepEP, not expert parallelism (v0.4.6 and v0.4.6.post1 deepseek_v2.py determine_n_share_experts_fusion: compute
capability >= (9, 0), DeepseekV3ForCausalLM, 256 routed experts and `not enable_deepep_moe`): under --enable-ep-moe
(server_args.py: ep_size = tp_size) the MoE layer is an EPMoE of 256 + T experts dealt (256 + T) / T a GPU whole
(layers/moe/ep_moe/layer.py: num_experts_per_partition = num_experts // tp_size), still one shared expert's bytes a
GPU besides its 256 / T routed ones. --enable-deepep-moe (no fusion; shared_experts built with tp_size=1, whole on
every GPU too) has no rooflab option and is not modelled.
"""

from __future__ import annotations

from ..cost.checks import whole_number
from ..errors import InputError, shown
from ..limits import MAX_GPUS
from ..specs.weights import WeightComponent
from ..vocab import Engine

#: The newest SGLang release these rules were read from, taken where no release is given.
NEWEST_READ = (0, 5, 10)

#: --enable-dp-attention with one attention rank (--dp 1, or --tp 1 without --dp), refused by capacity and the step
#: alike: it is plain TP. server_args.py at each release read: v0.4.3.post2 - v0.4.4 set dp_size = tp_size under
#: DP attention, v0.4.5 - v0.5.1 assert dp_size > 1 ('Please set a dp-size > 1'), v0.5.2 - v0.5.10 turn DP
#: attention off at dp_size 1 (_handle_data_parallelism).
ONE_RANK = ("is one attention rank, plain TP (SGLang v0.5.2+ turns DP attention off at --dp 1, v0.4.5 - v0.5.1 "
            "refuse it, v0.4.4 and older set --dp to --tp): give --dp N dividing --tp, 1 < N, or leave "
            "--enable-dp-attention out")


def _release(release: tuple[int, ...] | None) -> tuple[int, ...]:
    if release is None:
        return NEWEST_READ
    if not isinstance(release, tuple) or not release or len(release) > 4 or not all(
            isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10 ** 7 for n in release):
        raise InputError(f"an SGLang release must be a tuple of numbers such as (0, 5, 7), got {shown(release)}")
    return release + (0,) * (3 - len(release))


def check_attention_ranks(attention_data_parallel: object, tensor_parallel: int) -> int:
    """`attention_data_parallel` (N, SGLang's --dp under --enable-dp-attention: the attention ranks inside the TP
    group) as an int, a whole number >= 1 dividing `tensor_parallel`, else an InputError naming it. A bool is the
    dp_attention flag the argument replaced (True: N = TP), refused with how to say it now, not read as 1."""
    what = "attention_data_parallel"
    if isinstance(attention_data_parallel, bool):
        raise InputError(f"{what} is a number of attention ranks (1: none; tensor_parallel: DP attention over the "
                         f"whole group), not the dp_attention flag: got {attention_data_parallel}")
    ranks = whole_number(attention_data_parallel, what, maximum=MAX_GPUS)
    if tensor_parallel % ranks:
        raise InputError(f"{what} {ranks} must divide tensor_parallel {tensor_parallel} (each attention rank runs "
                         f"over tensor_parallel / {what} GPUs)")
    return ranks


def check_dp_attention(tensor_parallel: int, attention_data_parallel: int,
                       release: tuple[int, ...] | None = None) -> None:
    """SGLang before v0.4.5 runs DP attention over the whole TP group only (server_args.py sets dp_size = tp_size):
    an InputError for 1 < N < T at such a release."""
    if 1 < attention_data_parallel < tensor_parallel and _release(release) < (0, 4, 5):
        raise InputError(f"--enable-dp-attention --dp {attention_data_parallel} under --tp {tensor_parallel}: "
                         f"SGLang v{'.'.join(map(str, release))} sets --dp to --tp under DP attention (a smaller "
                         "--dp is v0.4.5 and newer)")


def check_dp_attention_engine(engine, attention_data_parallel: int) -> None:
    """--enable-dp-attention is SGLang's switch and these are SGLang's layouts: an InputError for another `engine`
    (a rooflab.vocab.Engine; None, rooflab's own bound or step, takes SGLang's), naming the engine's own spelling.
    vLLM's data-parallel attention is --data-parallel-size N: each DP rank runs attention over its own TP group
    (attention and its absorbed MLA copies over --tp), the experts shared over --enable-expert-parallel."""
    if attention_data_parallel <= 1 or engine is None or engine is Engine.sglang:
        return
    own = ("vLLM's is --data-parallel-size N (each rank's attention over its own --tp, experts over "
           "--enable-expert-parallel)" if engine is Engine.vllm else f"{engine.title}'s is not modelled")
    raise InputError(f"--enable-dp-attention --dp {attention_data_parallel} is SGLang's data-parallel attention "
                     f"(attention over TP / DP inside the TP group); {own}: give that, or --engine sglang")


def dp_attention_splits(tensor_parallel: int, attention_data_parallel: int,
                        release: tuple[int, ...] | None = None) -> dict[str, int]:
    """{component: ways it is split} under SGLang's DP attention at `release` (module docstring); {} without it.
    An InputError where SGLang at `release` runs no such layout (check_dp_attention): the one function capacity,
    the engine model and the step take the release's layout from."""
    attention_data_parallel = check_attention_ranks(attention_data_parallel, tensor_parallel)
    if attention_data_parallel <= 1:
        return {}
    check_dp_attention(tensor_parallel, attention_data_parallel, release)
    r = _release(release)
    attention_tp = tensor_parallel // attention_data_parallel
    return {WeightComponent.attention: attention_tp,
            WeightComponent.embeddings: attention_tp if r >= (0, 5, 8) else 1,
            WeightComponent.lm_head: tensor_parallel if r >= (0, 4, 5) else 1}


def fuses_shared_expert_copies(model, compute_capability: tuple[int, int] | None,
                               release: tuple[int, ...] | None) -> bool:
    """Whether SGLang v0.4.6.x clones TP copies of the shared expert into the MoE layer (module docstring), so
    that every GPU holds it whole, with or without expert parallelism (the gate is DeepEP, not modelled)."""
    is_v3 = model.is_moe and model.num_experts == 256 and model.num_shared_experts > 0 and any(
        t.is_latent for t in model.layer_types.values())
    return (release is not None and (0, 4, 6) <= _release(release) < (0, 4, 7) and is_v3
            and compute_capability is not None and tuple(compute_capability) >= (9, 0))


__all__ = ["NEWEST_READ", "ONE_RANK", "check_attention_ranks", "check_dp_attention", "check_dp_attention_engine",
           "dp_attention_splits", "fuses_shared_expert_copies"]
