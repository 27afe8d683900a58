"""Show the working: every figure of a report as formula, numbers substituted, and result with units.

The derivation follows the chapter "Naive attention and the online softmax":
S and P, the traffic of each kernel, the total, F, the intensity, the compulsory intensity,
the floors, the ridge and the distance from it, whole-model times, and whether it fits.

Each value shown is the one rooflab's cost functions and floors compute. The formula beside
it is evaluated independently from the symbols, and the two must agree: a disagreement is a
bug in rooflab (ExplainMismatch), never something to round away.

A model's layers may be of several types (sliding windows, chunks, sinks, MLA, linear attention);
a derivation prices one type, by default the model's main softmax type, through the same
rooflab.cost.layers functions the report uses.

derivation.py holds the machinery (steps, formula evaluation, the agreement check), layer.py the
choice of layer type, spans.py what windows and chunks see, prefill.py, decode.py, mla.py and
recurrent.py the variants' derivations, render.py the text and markdown layouts.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..cost.batch import DecodeBatch
from ..cost.dcp import shard_tokens
from ..cost.layers import layer_prefill
from ..deployment import Deployment
from ..errors import InputError, shown
from ..predict import prefill_kernel
from ..floors import Ceilings
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from ..vocab import EXPLAINED as _VOCAB_EXPLAINED
from ..vocab import CeilingSource, Variant
from .decode import decode_lens, explain_decode_step, explain_merge
from .derivation import (AGREEMENT_RTOL, ExplainMismatch, Explanation, Section, Step, Unit, _Derivation, evaluate,
                         format_result, heads_and_roofs, number, substitute)
from .layer import Layer, choose_layer
from .mla import mla_symbols
from .predicted import explain_prediction
from .prefill import explain_flash, explain_naive
from .recurrent import explain_recurrent, recurrent_symbols
from .render import render_explanation

#: The variants explain derives: the vocabulary's list, and the linear layers' state update.
EXPLAINED = _VOCAB_EXPLAINED + tuple(v for v in (Variant.recurrent,) if v not in _VOCAB_EXPLAINED)

#: The variants that derive a decode step (and so take q_len).
_DECODE = (Variant.paged, Variant.split_kv, Variant.recurrent)

def _per_gpu(variant: Variant, model: ModelSpec, deployment: Optional[Deployment], context_lens, batch: int,
             page_size: int) -> tuple[int, Sequence[int] | DecodeBatch]:
    """(the TP degree the heads split by, the decode lengths one GPU holds) for `deployment` (None: one GPU)."""
    if deployment is None:
        return 1, context_lens
    if not isinstance(deployment, Deployment):
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
    deployment.check_model(model)
    other = [name for name, n in (("pipeline", deployment.pipeline_parallel), ("data", deployment.data_parallel),
                                  ("prefill-context", deployment.prefill_context_parallel),
                                  ("data-parallel attention", deployment.attention_data_parallel),
                                  ("expert", deployment.expert_parallel)) if n > 1]
    if other:
        raise InputError(f"explain derives one layer on one GPU of a TP group (with --dcp or --kv-parallel for a "
                         f"decode step); {', '.join(other)} parallelism is the step's (report --phase step)")
    tp, split = deployment.tensor_parallel, deployment.position_split
    if tp > 1 and variant in (Variant.naive, Variant.recurrent):
        raise InputError(f"--tp applies to the flash, paged, split_kv and merge derivations; {variant.value} is "
                         f"derived for one GPU holding the whole layer")
    if split == 1:
        return tp, context_lens
    if variant not in (Variant.paged, Variant.split_kv):
        raise InputError("--dcp and --kv-parallel split a decode step's KV: they apply to --variant paged or split_kv")
    lens = decode_lens(context_lens, batch)
    shares = np.array([float(shard_tokens(int(n), split, page_size)) for n in lens.lengths])
    lengths, where = np.unique(shares, return_inverse=True)          # two lengths may leave the same share
    counts = np.bincount(where, weights=lens.counts).astype(np.float64)
    return tp // deployment.decode_context_parallel, DecodeBatch(lengths, counts)


__all__ = ["AGREEMENT_RTOL", "EXPLAINED", "ExplainMismatch", "Explanation", "Layer", "Section", "Step", "Unit",
           "choose_layer", "evaluate", "explain", "format_result", "number", "render_explanation", "substitute"]


def explain(variant: Variant, model: ModelSpec, gpu: GpuSpec, seq_len: int = 8192, batch: int = 1,
            dtype: DType = DType.fp16, causal: bool = True, context_lens: Sequence[int] | DecodeBatch = (),
            page_size: int = 16, kv_dtype: Optional[DType] = None, splits: Optional[int] = None,
            ceilings: CeilingSource = CeilingSource.floor, layer_type: Optional[str] = None, q_len: int = 1,
            mla_sparse_fp8: bool = False, impl: Optional[str] = None,
            deployment: Optional[Deployment] = None) -> Explanation:
    """The derivation of every figure rooflab reports for `variant` on this workload, for one layer type.

    `layer_type` names one of the model's layer types (default: its main softmax type; for
    recurrent, its linear type). `q_len` new tokens per sequence apply to the decode variants;
    `mla_sparse_fp8` prices an MLA layer's cache in DeepSeek-V3.2's 656-byte sparse layout. Where the GPU
    has a fitted model of the kernel, a last section derives its predicted time (`impl`, or the report's
    choice), beside the floor.

    `deployment` (rooflab.Deployment): the derivation is one GPU's. Tensor parallelism splits the heads
    (cost.layers.layer_heads); a decode step's KV split by position (decode context parallelism inside the TP
    group, or KV parallelism over extra groups) leaves the fullest GPU ceil(pages / split) pages of each
    sequence, and under DCP that GPU computes the query heads of TP / DCP ranks (as rooflab.step prices it).
    """
    if variant not in EXPLAINED:
        raise InputError(f"explain covers {', '.join(v.value for v in EXPLAINED)}; not {variant.value}")
    if q_len != 1 and variant not in _DECODE:
        raise InputError(f"--q-len applies to the decode variants ({', '.join(v.value for v in _DECODE)}); "
                         f"not {variant.value}")
    tensor_parallel, context_lens = _per_gpu(variant, model, deployment, context_lens, batch, page_size)
    layer = choose_layer(model, variant, layer_type, tensor_parallel)
    if mla_sparse_fp8 and not (layer.spec.is_latent and variant in (Variant.paged, Variant.split_kv)):
        raise InputError("--mla-sparse-fp8 (--kv-cache-dtype fp8_ds_mla) applies to paged or split_kv decode of an mla "
                         "layer type")
    roofs = Ceilings.of(gpu, dtype, ceilings)
    kv_dtype = kv_dtype or dtype
    d = _Derivation({})
    if variant in (Variant.naive, Variant.flash):
        d.given("B", batch, "sequences in the batch")
        d.given("T", seq_len, "tokens per sequence (prefill)")
    if variant is Variant.recurrent:
        recurrent_symbols(d, layer, gpu, roofs, dtype, kv_dtype)
    elif layer.spec.is_latent and variant in (Variant.paged, Variant.split_kv):
        mla_symbols(d, layer, gpu, roofs, dtype)
    else:
        heads_and_roofs(d, layer, gpu, roofs, dtype, variant in (Variant.naive, Variant.merge))
    causal_text = "causal" if causal or layer.windowed else "non-causal"
    workload = f"T = {seq_len:,}, batch {batch}, {dtype.value}, {causal_text}"
    if variant in (Variant.naive, Variant.flash):
        naive = variant is Variant.naive
        explain_prefill = explain_naive if naive else explain_flash
        tail = explain_prefill(d, layer, gpu, roofs, seq_len, batch, dtype, causal)
        tail += explain_prediction(d, gpu, prefill_kernel(layer.spec, naive), lambda n, k: layer_prefill(
            model, layer.name, seq_len, batch, dtype, causal, naive=naive, **({} if naive else dict(
                gpu=gpu, num_sms=n, units_per_sm=k, tensor_parallel=layer.tensor_parallel))), dtype, impl)
    elif variant is Variant.merge:
        tail = explain_merge(d, layer, roofs, seq_len * batch, dtype, gpu, impl)
        workload = f"{seq_len * batch:,} tokens x {layer.heads.num_qo_heads} heads, {dtype.value}"
    elif variant is Variant.recurrent:
        lens = decode_lens(context_lens, batch)
        tail = explain_recurrent(d, layer, gpu, roofs, lens, seq_len, batch, dtype, kv_dtype, q_len)
        workload = (f"decode step, {lens.size:,} sequence{'s' if lens.size > 1 else ''}"
                    + (f", {q_len} new tokens each" if q_len > 1 else "")
                    + f"; prefill T = {seq_len:,}, batch {batch}; {dtype.value}"
                    + (f", state {kv_dtype.value}" if kv_dtype != dtype and not layer.spec.state_dtype else ""))
    else:
        tail, workload = explain_decode_step(d, variant, layer, gpu, roofs, context_lens, batch, page_size, dtype,
                                             kv_dtype, splits, q_len, mla_sparse_fp8, impl)
        if mla_sparse_fp8:
            workload += ", sparse fp8 latent"
    if deployment is not None and deployment.position_split > 1:
        workload += f" (this GPU's share: ceil(pages / {deployment.position_split}) of each sequence's)"
    where = gpu.display_name
    if deployment is not None and deployment.num_gpus > 1:
        degrees = deployment.describe().rsplit(" (", 1)[0]
        where = f"one GPU of {deployment.num_gpus} x {gpu.display_name} ({degrees})"
    title = (f"{variant.value} attention, {model.display_name}{layer.described()} on {where}: "
             f"{workload}, {roofs.source.value} ceilings")
    return Explanation(title, tuple(d.legend), d.finish(), tail)
