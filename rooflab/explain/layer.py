"""The layer type a derivation prices: which one (by name, or the model's default), its heads and layer count.

explain prices one layer type at a time, through the same cost functions the report uses
(rooflab.cost.layers), so the two show the same figures. The default is the model's main softmax
layer type (the one the report's decode facts describe); `--variant recurrent` defaults to the
linear type with the most layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..cost.common import Visibility
from ..cost.layers import layer_heads, main_attention
from ..errors import InputError
from ..specs import AttentionHeads, LayerType, ModelSpec
from ..vocab import LayerKind, Variant


@dataclass(frozen=True)
class Layer:
    """One of a model's layer types, as a derivation sees it."""

    model: ModelSpec
    name: str
    spec: LayerType
    tensor_parallel: int = 1          # the heads one GPU of a TP group computes (AttentionHeads.shard)

    @property
    def kind(self) -> LayerKind:
        return self.spec.kind

    @property
    def heads(self) -> AttentionHeads:
        """The heads this type computes with on one GPU: its own where the spec gives them, else the model's, split
        tensor_parallel ways (cost.layers.layer_heads, as the report and the step split them)."""
        return layer_heads(self.model, self.spec, self.tensor_parallel)

    @property
    def count(self) -> int:
        """Layers of this type in the model."""
        return self.model.layer_counts[self.name]

    @property
    def visibility(self) -> Visibility:
        return Visibility.of(self.spec)

    @property
    def windowed(self) -> bool:
        """A sliding window or a chunk: each query sees a bounded span of keys."""
        return not self.visibility.is_full

    @property
    def separate_values(self) -> bool:
        """v and o narrower or wider than q and k (d_v != d): the formulas carry d_v."""
        return self.heads.value_dim != self.heads.head_dim

    @property
    def dv(self) -> str:
        """The symbol of the value width: 'd' where it equals the q.k width, else 'd_v'."""
        return "d_v" if self.separate_values else "d"

    @property
    def is_plain(self) -> bool:
        """Full attention without sinks in a model of one layer type: explain shows it as it always has."""
        return self.spec.is_full and not self.spec.sinks and not self.model.is_hybrid

    def described(self) -> str:
        """", 'local' layers (sliding (window 1024))": for a title; empty for a plain model."""
        return "" if self.is_plain else f", '{self.name}' layers ({self.spec.describe()})"

    def whole_model_title(self) -> str:
        if self.model.is_hybrid:
            return f"The {self.count} '{self.name}' layers ({self.model.num_layers} in the model)"
        return f"The whole model ({self.model.num_layers} layers)"

    def layers_meaning(self) -> str:
        if self.model.is_hybrid:
            return f"layers of type '{self.name}' ({self.count} of {self.model.num_layers})"
        return "layers"


def choose_layer(model: ModelSpec, variant: Variant, name: Optional[str], tensor_parallel: int = 1) -> Layer:
    """The layer type `variant` is derived for: `name`, or the default, as one GPU of a `tensor_parallel` group
    computes it; InputError where it does not apply."""
    types = ", ".join(f"{n} ({t.kind.value})" for n, t in model.layer_types.items())
    if name is not None and name not in model.layer_types:
        raise InputError(f"--layer-type: {model.name} has no layer type '{name}'; it has {types}")
    linear = [n for n in model.layer_counts if not model.layer_types[n].is_attention]
    if variant is Variant.recurrent:
        if not linear:
            raise InputError(f"--variant recurrent derives a linear-attention layer; {model.name} has none "
                             f"(its layer types: {types})")
        name = name or max(linear, key=model.layer_counts.get)
        if model.layer_types[name].is_attention:
            raise InputError(f"--variant recurrent needs a linear layer type; '{name}' is "
                             f"{model.layer_types[name].kind.value} (linear: {', '.join(linear)})")
        if model.layer_types[name].linear_mixer.is_mamba:
            raise InputError(f"--variant recurrent derives Gated DeltaNet's recurrence; layer type '{name}' is a "
                             f"{model.layer_types[name].linear_mixer.value} (Mamba) layer, whose cost is not modelled")
        return Layer(model, name, model.layer_types[name], tensor_parallel)
    if len(linear) == len(model.layer_counts):
        raise InputError(f"{model.name} has no softmax attention layer; derive its layers with --variant recurrent")
    name = name or main_attention(model)
    if name not in model.layer_counts:
        raise InputError(f"--layer-type: no layer of {model.name} has type '{name}'")
    if not model.layer_types[name].is_attention:
        raise InputError(f"layer type '{name}' is linear attention (a recurrent state, no KV cache): "
                         f"use --variant recurrent, not {variant.value}")
    return Layer(model, name, model.layer_types[name], tensor_parallel)
