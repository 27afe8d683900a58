"""Typed, frozen descriptions of a GPU and a model; every one is checked when it is built (fields.py).

    gpu.py         GpuSpec (datasheet roofs, sizes) and MeasuredCeilings (what `rooflab calibrate` measured)
    fitted.py      FittedModel: one kernel implementation's time model on a GPU (`rooflab fit`)
    launch.py      LaunchTimes: a GPU's measured small-kernel and eager launch times (measured.launch)
    heads.py       AttentionHeads: query and KV heads, head dims; sharding by tensor parallelism
    layers.py      LayerType: full, sliding, chunked, mla, linear (LinearMixer: Gated DeltaNet, Mamba-1, Mamba-2);
                   what each keeps per token or sequence
    model.py       ModelSpec: the layer stack, MLP (dense / MoE), weight formats, KV bytes per token
    weights.py     parameters by component, weight bytes per GPU, bytes a step reads (parameters.py: its old name)
"""

from .fitted import FittedModel
from .gpu import GpuSpec, MeasuredCeilings
from .heads import AttentionHeads
from .launch import LaunchTimes
from .layers import FULL, MLA_SPARSE_FP8_BYTES, LayerType, LinearMixer
from .model import QUANT_METHOD_ALIASES, QUANTIZABLE, ModelSpec, QuantMethod
from .weights import ParameterCount, count_parameters

__all__ = ["FULL", "MLA_SPARSE_FP8_BYTES", "QUANTIZABLE", "AttentionHeads", "FittedModel", "GpuSpec", "LaunchTimes",
           "LayerType", "LinearMixer", "MeasuredCeilings", "ModelSpec", "ParameterCount", "QuantMethod", "QUANT_METHOD_ALIASES", "count_parameters"]
