"""A ModelSpec written as the config.json of an architecture that describes it, for from_hf_config to read back.

The architecture is the caller's, or the first of these the spec fits:

    MLA layers                    DeepseekV32ForCausalLM with a lightning indexer, else DeepseekV3ForCausalLM
    linear (Gated DeltaNet)       Qwen3NextForCausalLM
    linear (Mamba-1)              JambaForCausalLM
    linear (Mamba-2)              GraniteMoeHybridForCausalLM for a MoE, else BambaForCausalLM (hybrid_writers.py)
    sinks                         GptOssForCausalLM
    chunked layers                Llama4ForConditionalGeneration (text_config)
    MoE                           Qwen2MoeForCausalLM with shared experts; MixtralForCausalLM when every
                                  layer is a MoE and head_dim = hidden / heads; else Qwen3MoeForCausalLM
    sliding beside full, tied     Gemma2ForCausalLM for layer 0 sliding then alternating, else
                                  Gemma3ForConditionalGeneration
    sliding on every layer        MistralForCausalLM
    other sliding / full mixes    Qwen2ForCausalLM with attention biases, else Qwen3ForCausalLM
    full attention                Qwen2ForCausalLM with biases, Qwen3ForCausalLM where head_dim is not
                                  hidden / heads, else LlamaForCausalLM

The writers (writers.py) write each family's own rule fields where the stack follows the rule and
layer_types where it does not; a spec the architecture cannot express is a SpecError naming the field.
Layer types read back under their kinds' names ('sliding', ...).
"""

from __future__ import annotations

from typing import Optional

from ..errors import SpecError
from ..specs import LinearMixer, ModelSpec
from ..vocab import LayerKind
from .common import FP16_NOT_SUPPORTED
from .hybrid_writers import HYBRID_WRITERS
from .writers import WRITERS as _WRITERS
from .writers import kinds

#: Every architecture the exporter writes, and its writer.
WRITERS = {**_WRITERS, **HYBRID_WRITERS}

FULL, SLIDING, CHUNKED, LINEAR, MLA = (LayerKind.full, LayerKind.sliding, LayerKind.chunked, LayerKind.linear,
                                       LayerKind.mla)


def choose_architecture(m: ModelSpec) -> str:
    """The first architecture of the module docstring's list that the spec fits."""
    ks = set(kinds(m))
    plain_heads = m.head_dim * m.num_qo_heads == m.hidden_size
    if MLA in ks:
        indexed = any(m.layer_types[name].index_head_dim for name in m.layer_counts)
        return "DeepseekV32ForCausalLM" if indexed else "DeepseekV3ForCausalLM"
    if LINEAR in ks:
        mixers = {m.layer_types[name].linear_mixer for name in m.layer_counts} - {None}
        if LinearMixer.mamba1 in mixers:
            return "JambaForCausalLM"
        if LinearMixer.mamba2 in mixers:
            return "GraniteMoeHybridForCausalLM" if m.is_moe else "BambaForCausalLM"
        return "Qwen3NextForCausalLM"
    if any(m.layer_types[name].sinks for name in m.layer_counts):
        return "GptOssForCausalLM"
    if CHUNKED in ks:
        return "Llama4ForConditionalGeneration"
    if m.is_moe:
        if m.num_shared_experts:
            return "Qwen2MoeForCausalLM"
        everywhere = m.num_moe_layers == m.num_layers
        return "MixtralForCausalLM" if everywhere and plain_heads and not m.attention_bias else "Qwen3MoeForCausalLM"
    if ks == {SLIDING, FULL} and m.tie_word_embeddings:
        alternating = kinds(m) == [SLIDING if (i + 1) % 2 else FULL for i in range(m.num_layers)]
        return "Gemma2ForCausalLM" if alternating else "Gemma3ForConditionalGeneration"
    if ks == {SLIDING}:
        return "MistralForCausalLM"
    if m.attention_bias:
        return "Qwen2ForCausalLM"
    return "LlamaForCausalLM" if plain_heads and ks == {FULL} else "Qwen3ForCausalLM"


def export_hf_config(model: ModelSpec, architecture: Optional[str] = None) -> dict:
    """`model` as a config.json mapping (json.dumps writes the file) of `architecture`, or of the first
    architecture that fits it (see the module docstring)."""
    arch = architecture or choose_architecture(model)
    if arch not in WRITERS:
        raise SpecError(model.name, "architecture", arch, f"the exporter writes {', '.join(WRITERS)}")
    out = WRITERS[arch](model)
    _write_mtp(model, out)
    if (out.get("model_type") not in FP16_NOT_SUPPORTED) != model.fp16_supported:
        raise SpecError(model.name, "fp16_supported", model.fp16_supported,
                        f"{arch} (model_type {out.get('model_type')}) is "
                        f"{'' if model.fp16_supported else 'not '}refused in fp16 by vLLM; this spec says otherwise")
    return out


#: The config key a model_type counts its MTP layers under where it is not num_nextn_predict_layers (hf.MTP_KEYS).
MTP_KEY_BY_TYPE = {"minimax_m2": "num_mtp_modules"}


def _write_mtp(model: ModelSpec, out: dict) -> None:
    """ModelSpec.mtp_layers into `out` as hf.mtp_layers reads it back: under the model_type's key, or implied by a
    model_type that always ships them (hf.MTP_MODEL_TYPES: another count is a SpecError)."""
    from .common import MTP_MODEL_TYPES

    kind = out.get("model_type")
    if kind in MTP_MODEL_TYPES:
        if model.mtp_layers != MTP_MODEL_TYPES[kind]:
            raise SpecError(model.name, "mtp_layers", model.mtp_layers,
                            f"{kind} ships {MTP_MODEL_TYPES[kind]} MTP layer(s) by its model_type; a config cannot "
                            f"say {model.mtp_layers}")
        return
    if model.mtp_layers:
        out[MTP_KEY_BY_TYPE.get(kind, "num_nextn_predict_layers")] = model.mtp_layers


__all__ = ["MTP_KEY_BY_TYPE", "WRITERS", "choose_architecture", "export_hf_config"]
