"""Which GEMMs an engine launches for an MLA layer's projections at its release, as a closed set of layouts
(MlaLayout), and the facts, read from the engines' shipped source, that pick one (mla_layout_fact).

    separate           q_a [r_q, H] and kv_a [d_c + d_R, H] whole on every rank, q_b [h (d_nope + d_R), r_q] and
                       o [H, h d_v] over the rank's h heads; decode rows through kv_b's two absorbed matmuls (q_nope x
                       W_UK, the latent output x W_UV), prefill rows through the kv_b GEMM. rooflab's own step, vLLM
                       0.8.0 - 0.9.x, SGLang before 0.4.6
    fused_qkv_a        the same with q_a and kv_a as one GEMM [r_q + d_c + d_R, H] (one launch, one read of the
                       hidden): vLLM from 0.10.0 (fused_qkv_a_proj, MergedReplicatedLinear), SGLang from 0.4.6
                       (fused_qkv_a_proj_with_mqa, ReplicatedLinear)
    absorbed_into_q_o  vLLM 0.7.1 - 0.7.3 with VLLM_MLA_PERFORM_MATRIX_ABSORPTION (default 1): W_UK folded into q_b
                       (W_Q_UK [h d_c, r_q], requantised to block fp8 where the weights are fp8) and W_UV into o
                       (W_UV_O [H, h d_c], likewise), q_pe by W_QR [h d_R, r_q] in the activations' dtype ("W_QR is
                       small so for simplicity we dont bother requantizing it"); decode rows run these, prefill rows
                       the raw q_b, kv_b and o GEMMs

The absorbed matmuls' weights (W_UK, W_UV of `separate` and `fused_qkv_a`) are read in the width the engine keeps
them: absorbed_weight_bytes, from the same facts the capacity model counts them by (engines.memory: vLLM keeps
16-bit copies of a quantised kv_b from v0.8.0, SGLang fp8 w_kc / w_vc for block fp8 before v0.4.7, 16-bit after).

Facts (MLA_LAYOUT_FACTS), each (engine, first release, last release, layout, source); the wheels on PyPI read:
vLLM 0.7.0 (no MLA backend: not modelled, priced as `separate`), 0.7.1 and 0.7.3 (vllm/attention/backends/mla/
utils.py W_Q_UK, W_UV_O, W_QR; envs.py VLLM_MLA_PERFORM_MATRIX_ABSORPTION default "1"), 0.8.0 (mla/common.py: no
W_Q_UK), 0.9.2 (models/deepseek_v2.py: q_a_proj and kv_a_proj_with_mqa apart), 0.10.0 (deepseek_v2.py:411
fused_qkv_a_proj), 0.29.0 (deepseek_v2.py:1042); SGLang 0.4.3.post2, 0.4.5.post3 (apart), 0.4.6
(sglang/srt/models/deepseek_v2.py:447 fused_qkv_a_proj_with_mqa), 0.5.12 (:1371). A release between two read with
the same layout is assumed to keep it; after the last read, the last layout is assumed kept; vLLM's 0.7.4 dev
builds (dstack's 0.7.4.dev181+gf35f8e22) are taken as 0.7.3's layout, not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..vocab import _Named, engine_name, engine_release


class MlaLayout(_Named):
    """How the step launches an MLA layer's projection GEMMs (the module docstring)."""

    separate = "separate"                      # q_a, kv_a, q_b, W_UK / W_UV matmuls, o
    fused_qkv_a = "fused_qkv_a"                # q_a and kv_a as one GEMM
    absorbed_into_q_o = "absorbed_into_q_o"    # vLLM 0.7.1-0.7.3: W_Q_UK, W_QR, W_UV_O for decode rows


@dataclass(frozen=True)
class MlaLayoutFact:
    """An engine's MLA projection layout from release `first` to `last` (None: every later release)."""

    engine: str
    first: tuple
    last: Optional[tuple]
    layout: MlaLayout
    source: str


MLA_LAYOUT_FACTS = (
    MlaLayoutFact("vllm", (0, 7, 1), (0, 7, 99), MlaLayout.absorbed_into_q_o,
                  "vllm 0.7.1 / 0.7.3 wheels: attention/backends/mla/utils.py W_Q_UK, W_UV_O (VLLM_MLA_PERFORM_"
                  "MATRIX_ABSORPTION, default 1 in envs.py)"),
    MlaLayoutFact("vllm", (0, 8, 0), (0, 9, 99), MlaLayout.separate,
                  "vllm 0.8.0 wheel: attention/backends/mla/common.py W_UK_T / W_UV; 0.9.2 deepseek_v2.py q_a_proj "
                  "and kv_a_proj_with_mqa apart"),
    MlaLayoutFact("vllm", (0, 10, 0), None, MlaLayout.fused_qkv_a,
                  "vllm 0.10.0 wheel: models/deepseek_v2.py:411 fused_qkv_a_proj (MergedReplicatedLinear); 0.29.0 "
                  ":1042"),
    MlaLayoutFact("sglang", (0, 0, 0), (0, 4, 5, 99), MlaLayout.separate,
                  "sglang 0.4.3.post2 / 0.4.5.post3 wheels: srt/models/deepseek_v2.py q_a_proj and "
                  "kv_a_proj_with_mqa apart"),
    MlaLayoutFact("sglang", (0, 4, 6), None, MlaLayout.fused_qkv_a,
                  "sglang 0.4.6 wheel: srt/models/deepseek_v2.py:447 fused_qkv_a_proj_with_mqa; 0.5.12 :1371"),
)


def mla_layout_fact(engine, version) -> tuple[MlaLayout, str]:
    """(the MLA projection layout `engine` runs at `version`, why). No engine, another engine, a release before
    every fact (vLLM 0.7.0) or no release: `separate`, rooflab's own."""
    name = engine_name(engine)
    at = engine_release(version) if version else None
    if at is not None:
        for fact in MLA_LAYOUT_FACTS:
            if fact.engine == name and fact.first <= at and (fact.last is None or at <= fact.last):
                return fact.layout, f"MLA projections {fact.layout.value} ({fact.source})"
    if not name:
        return MlaLayout.separate, "MLA projections separate (rooflab's own step)"
    return MlaLayout.separate, f"MLA projections separate ({name} {version}'s layout not read)"


def absorbed_weight_bytes(engine, version, model, attention_tp: int, weight_format, activation_bytes: float) -> float:
    """Bytes a parameter of the absorbed W_UK / W_UV matmuls the step reads, as `engine` at `version` keeps them:
    SGLang's w_kc / w_vc at engines.memory.sglang_absorbed_bytes' width (fp8 for per-tensor fp8, and for block fp8
    before v0.4.7; the model's dtype otherwise); every other engine and rooflab's own step at the activations'
    width (vLLM from v0.8.0 keeps 16-bit copies of a quantised kv_b: engines.memory.vllm_absorbed_bytes; an
    unquantised kv_b is read as it is stored, in the model's dtype)."""
    from ..engines.memory import rank_kv_b_parameters, sglang_absorbed_bytes

    name = engine_name(engine)
    params = rank_kv_b_parameters(model, attention_tp)
    if name != "sglang" or not params:
        return float(activation_bytes)
    return sglang_absorbed_bytes(model, attention_tp, weight_format, engine_release(version) if version else None) \
        / params


__all__ = ["MLA_LAYOUT_FACTS", "MlaLayout", "MlaLayoutFact", "absorbed_weight_bytes", "mla_layout_fact"]
