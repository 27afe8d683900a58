"""Tests of rooflab/hf/hybrid_writers.py: a spec with Mamba layers written as a Jamba, Bamba or Granite 4.0-H
config.json reads back as the same architecture (more_families.py), and what a writer has no field for is a
SpecError naming it. The specs are the small configs of tests/hf/test_more_families.py, read first."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import SpecError
from rooflab.hf import export_hf_config, same_architecture
from rooflab.hf.export import choose_architecture
from support import JAMBA_V01, read_config

from .test_more_families import GRANITE_TYPES, SMALL_MAMBA2

GRANITE_MOE = {**SMALL_MAMBA2, "architectures": ["GraniteMoeHybridForCausalLM"], "layer_types": GRANITE_TYPES,
               "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 768}
#: (config, the architecture the exporter chooses for its spec: a dense Mamba-2 stack is Bamba's)
CASES = {
    "jamba": (JAMBA_V01, "JambaForCausalLM"),
    "jamba-dense": ({**JAMBA_V01, "num_experts": 1}, "JambaForCausalLM"),
    "bamba": ({**SMALL_MAMBA2, "architectures": ["BambaForCausalLM"], "attn_layer_indices": [3, 7]},
              "BambaForCausalLM"),
    "granite-moe": (GRANITE_MOE, "GraniteMoeHybridForCausalLM"),
    "granite-dense": ({**GRANITE_MOE, "num_local_experts": 0}, "BambaForCausalLM"),
}


@pytest.mark.parametrize("name", CASES)
def test_a_hybrid_reads_back_as_itself(name):
    config, chosen = CASES[name]
    m = read_config(config)
    assert choose_architecture(m) == chosen
    for arch in {chosen, config["architectures"][0]}:
        out = export_hf_config(m, arch)
        assert out["architectures"] == [arch] and same_architecture(m, read_config(out))


def test_jamba_writes_its_periods():
    out = export_hf_config(read_config(JAMBA_V01))
    assert (out["attn_layer_period"], out["attn_layer_offset"], out["expert_layer_period"],
            out["expert_layer_offset"], out["mamba_expand"], out["mamba_dt_rank"]) == (8, 4, 2, 1, 2, 256)


def test_what_an_architecture_cannot_hold_is_refused():
    jamba = read_config(JAMBA_V01)
    with pytest.raises(SpecError) as caught:          # attention on layers 0, 4, 12, 20, 28: no i % p == o rule
        export_hf_config(dataclasses.replace(jamba, first_layers=("full",)))
    assert caught.value.field == "layer_pattern"
    bamba = read_config(CASES["bamba"][0])
    with pytest.raises(SpecError) as caught:
        export_hf_config(bamba, "JambaForCausalLM")
    assert caught.value.field == "layer_types"       # Bamba's Mamba-2 layers are not Jamba's Mamba-1
    with pytest.raises(SpecError) as caught:
        export_hf_config(read_config(GRANITE_MOE), "Qwen3NextForCausalLM")
    assert "not Mamba" in str(caught.value)
    with pytest.raises(SpecError) as caught:
        export_hf_config(read_config(GRANITE_MOE), "BambaForCausalLM")
    assert caught.value.field == "num_experts"
