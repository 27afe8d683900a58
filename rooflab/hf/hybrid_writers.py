"""Writers for the Mamba hybrids (more_families.py reads them back): a ModelSpec with Mamba layers as the config.json
of JambaForCausalLM (Mamba-1), BambaForCausalLM (Mamba-2, dense) or GraniteMoeHybridForCausalLM (Mamba-2, a shared
MLP and routed experts), or a SpecError naming the field the architecture has no room for.

    Jamba             attention where i % attn_layer_period == attn_layer_offset (no layer_types field: another
                      stack is refused); experts where i % expert_layer_period == expert_layer_offset, the dense
                      and expert MLPs both intermediate_size
    Bamba             attn_layer_indices; a dense MLP of intermediate_size
    GraniteMoeHybrid  layer_types ('mamba' / 'attention'); a shared MLP of shared_intermediate_size on every layer,
                      experts of intermediate_size on every layer or none (num_local_experts 0)

Each writes mamba_expand as d_inner / hidden_size, which must be whole (the readers compute d_inner from it).
"""

from __future__ import annotations

from ..specs import LayerType, LinearMixer, ModelSpec
from .writers import FULL, LINEAR, _refuse, base, check, kinds, moe_fields, one_type


def mamba_type(m: ModelSpec, arch: str, mixer: LinearMixer) -> LayerType:
    """The spec's one Mamba layer type, of `mixer`, with a whole mamba_expand."""
    t = one_type(m, LINEAR)
    if t is None or t.linear_mixer is not mixer:
        raise _refuse(m, "layer_types", t.linear_mixer.value if t else None, f"{arch} has {mixer.value} layers")
    if t.ssm_width % m.hidden_size:
        raise _refuse(m, "layer_types", t.ssm_width, f"{arch}'s mamba_expand x hidden_size ({m.hidden_size}) must "
                                                     "give the Mamba width")
    return t


def mamba2_fields(m: ModelSpec, arch: str) -> dict:
    t = mamba_type(m, arch, LinearMixer.mamba2)
    return {"mamba_n_heads": t.ssm_heads, "mamba_d_head": t.ssm_head_dim, "mamba_n_groups": t.ssm_groups,
            "mamba_d_state": t.ssm_state, "mamba_d_conv": t.linear_conv_kernel,
            "mamba_expand": t.ssm_width // m.hidden_size}


def periodic_rule(m: ModelSpec, layers: list[int], key: str) -> tuple[int, int]:
    """(period, offset) with exactly `layers` at i % period == offset, or a SpecError naming `key`."""
    n = m.num_layers
    for period in range(1, n + 1):
        for offset in range(period):
            if [i for i in range(n) if i % period == offset] == layers:
                return period, offset
    raise _refuse(m, key, layers, "JambaForCausalLM places these layers every k-th from an offset only")


def jamba(m: ModelSpec) -> dict:
    arch = "JambaForCausalLM"
    check(m, arch, moe=None, bias=False)
    out = base(m, arch, "jamba", (FULL, LINEAR))
    t = mamba_type(m, arch, LinearMixer.mamba1)
    period, offset = periodic_rule(m, [i for i, k in enumerate(kinds(m)) if k is FULL], "layer_pattern")
    out.update(attn_layer_period=period, attn_layer_offset=offset, mamba_d_state=t.ssm_state,
               mamba_d_conv=t.linear_conv_kernel, mamba_expand=t.ssm_width // m.hidden_size,
               mamba_dt_rank=t.ssm_dt_rank, intermediate_size=m.ffn_size)
    if not m.is_moe:
        return {**out, "num_experts": 1, "num_experts_per_tok": 1, "expert_layer_period": 1,
                "expert_layer_offset": 0}
    moe_fields(m, shared=0)
    if m.dense_ffn_size not in (None, m.ffn_size):
        raise _refuse(m, "dense_ffn_size", m.dense_ffn_size, f"{arch}'s dense and expert MLPs are both "
                                                             "intermediate_size")
    e_period, e_offset = periodic_rule(m, [i for i in range(m.num_layers) if m.is_moe_layer(i)], "moe_layer_step")
    return {**out, "num_experts": m.num_experts, "num_experts_per_tok": m.num_experts_per_token,
            "expert_layer_period": e_period, "expert_layer_offset": e_offset}


def bamba(m: ModelSpec) -> dict:
    arch = "BambaForCausalLM"
    check(m, arch, moe=False, bias=False)
    out = base(m, arch, "bamba", (FULL, LINEAR))
    return {**out, **mamba2_fields(m, arch), "intermediate_size": m.ffn_size,
            "attn_layer_indices": [i for i, k in enumerate(kinds(m)) if k is FULL]}


def granite_moe_hybrid(m: ModelSpec) -> dict:
    arch = "GraniteMoeHybridForCausalLM"
    check(m, arch, moe=None)
    out = base(m, arch, "granitemoehybrid", (FULL, LINEAR))
    out.update(mamba2_fields(m, arch), layer_types=["attention" if k is FULL else "mamba" for k in kinds(m)])
    if not m.is_moe:
        return {**out, "num_local_experts": 0, "shared_intermediate_size": m.ffn_size,
                "intermediate_size": m.ffn_size}
    moe_fields(m, first=False, step=False, shared=1)
    return {**out, "num_local_experts": m.num_experts, "num_experts_per_tok": m.num_experts_per_token,
            "intermediate_size": m.ffn_size, "shared_intermediate_size": m.shared_expert_ffn_size or m.ffn_size}


HYBRID_WRITERS = {"JambaForCausalLM": jamba, "BambaForCausalLM": bamba,
                  "GraniteMoeHybridForCausalLM": granite_moe_hybrid}

__all__ = ["HYBRID_WRITERS", "bamba", "granite_moe_hybrid", "jamba"]
