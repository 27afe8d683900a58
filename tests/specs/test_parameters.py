"""Every bundled model: its parameter count against the published one, the round trip through a config.json,
the real config.json files in tests/data/hf_configs loading to the bundled specs, KV golden values, and the CLI.

Published counts and what each includes are in each YAML's comment and parameters_note; the config.json
files and where they were copied from are listed in tests/data/hf_configs/SOURCES.md.
"""

from __future__ import annotations

import pytest

from rooflab import available, load_model


BUNDLED = available("models")


#: Published counts are rounded figures (671B, 80B) or exact ones; the derived count leaves out small terms
#: (q/k norms, output gates, expert biases: below 0.6% of any bundled model). 1% holds them all.
PARAMETER_TOLERANCE = 0.01


def llama4_scout_vision_parameters() -> int:
    """Llama 4 Scout's vision encoder and projector: counted in the published 109B, not modelled by rooflab.

    The shapes of transformers' Llama4VisionModel and Llama4MultiModalProjector for Scout's vision_config
    (width 1408, 34 layers with biases, MLP 5632, 14-pixel patches of 336-pixel images, a pixel-shuffle
    MLP 4 x 1408 -> 4096 -> 4096, a projector 4096 -> the text model's 5120): 871,932,416 parameters.
    """
    d, layers, mlp, positions = 1408, 34, 5632, (336 // 14) ** 2 + 1
    embeddings = d + positions * d + 3 * 14 * 14 * d + 2 * 2 * d   # class token, positions, patches, 2 norms
    layer = 4 * (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 2 * 2 * d
    adapter = 4 * d * 4096 + 4096 * 4096
    projector = 4096 * 5120
    return embeddings + layers * layer + adapter + projector


#: Parameters a published count includes that rooflab's spec does not describe.
NOT_MODELLED = {"llama-4-scout": llama4_scout_vision_parameters()}


# --- parameter counts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", BUNDLED)
def test_derived_parameters_within_1_percent_of_the_published_count(name):
    m = load_model(name)
    assert m.name == name and m.num_parameters is not None, "every bundled model gives its published count"
    derived = m.derived_parameters + NOT_MODELLED.get(name, 0)
    assert derived == pytest.approx(m.num_parameters, rel=PARAMETER_TOLERANCE)


def test_what_the_published_count_includes_is_stated():
    new = ("deepseek-v3", "gpt-oss-120b", "gpt-oss-20b", "gemma-3-27b", "qwen3-32b", "qwen3-235b-a22b",
           "llama-4-scout", "qwen3-next-80b-a3b", "mistral-7b-v0.1")
    assert all(load_model(name).parameters_note for name in new)


def test_llama4_scout_vision_tower_by_its_shapes():
    assert llama4_scout_vision_parameters() == 871_932_416
    derived = load_model("llama-4-scout").derived_parameters
    assert derived == 107_769_861_120                           # the text model
    assert (derived + llama4_scout_vision_parameters()) / 1e9 == pytest.approx(108.64, abs=0.01)  # "109B"
