"""Every public API entry point checks its arguments: a wrong kind of value is rooflab's InputError (or SpecError /
NumericsError, both RooflabError) naming the argument, never a ZeroDivisionError, OverflowError, AttributeError
or TypeError from deep inside, and never a number read wrongly (issue 24).

Two parts. The walk: each entry point in ENTRY_POINTS is called with valid arguments, then with each argument in
turn replaced by each wrong kind of value in WRONG (None, text, a bool, NaN, inf, 0, negative, 1e300, a huge
integer, a list, a complex number, an object of the wrong class). Where a value is a valid input for that argument
(None for an optional one, a list for an array of lengths, a name for a DType, 0 for a count that may be 0), the
entry lists it in its `accepts`; everything else must be refused with a RooflabError whose message names the
argument. Then the regressions: numbers that were read wrongly instead of refused.
"""

from __future__ import annotations

import datetime
import math

import numpy as np
import pytest

from rooflab.cost.common import as_array
from rooflab.cost.flash import FlashTile, flash_prefill
from rooflab.cost.gemm import gemm
from rooflab.cost.naive import naive_prefill
from rooflab.errors import InputError
from rooflab.specs import AttentionHeads
from support import heads, refused


# --- numbers read wrongly instead of refused ---------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    np.array([1024 + 0j]), np.complex128(1024), [1024 + 0j], np.array(["1024"]), ["1024"], np.array([b"1024"]),
    [b"1024"], bytearray(b"\x05"), memoryview(b"\x05"), np.array(["2024-01-01"], dtype="datetime64[D]"),
    np.datetime64("2024-01-01"), np.array([5], dtype="timedelta64[s]"), [datetime.date(2024, 1, 1)],
    np.ma.array([1024, 2048], mask=[False, True]), np.zeros(2, dtype=[("t", "f8")]), [[True, 2]], [None],
    [10**400], [[1024], [1024, 2048]]])
def test_cost_functions_refuse_arrays_that_are_not_real_numbers(value):
    """Complex numbers lost their imaginary part, text and raw bytes were parsed, dates became days since 1970 and
    masked entries were priced as if present; each is now refused naming the argument."""
    refused(lambda: as_array(value, "seq_len"), "seq_len")
    refused(lambda: flash_prefill(heads(), value), "seq_len")
    refused(lambda: naive_prefill(heads(), 1024, value), "batch")


def test_arrays_of_real_numbers_in_any_form_are_read_alike():
    forms = [[1024, 2048], (1024, 2048), np.array([1024, 2048], dtype=np.int32), np.array([1024.0, 2048.0]),
             np.ma.array([1024, 2048]), [np.int64(1024), 2048.0], np.array([1024, 2048], dtype=object)]
    for form in forms:
        assert as_array(form, "seq_len").tolist() == [1024.0, 2048.0]


@pytest.mark.parametrize("value", ["yes", "no", 1, 0, None, "True", [True]])
def test_causal_must_be_a_bool(value):
    """causal='yes' (and 'no', which is truthy) priced the causal half; a switch takes True or False only."""
    refused(lambda: flash_prefill(heads(), 1024, causal=value), "causal")
    refused(lambda: naive_prefill(heads(), 1024, causal=value), "causal")
    assert flash_prefill(heads(), 1024, causal=np.bool_(True)).flops == flash_prefill(heads(), 1024, causal=True).flops


@pytest.mark.parametrize("groups", [0, 0.0, -1, [1, 0], math.nan])
def test_gemm_groups_must_be_positive(groups):
    """groups=0 read no weights at all (G n k b_w = 0), a GEMM without its matrix."""
    refused(lambda: gemm(16, 4096, 4096, groups=groups), "groups")
    assert gemm(16, 4096, 4096, groups=0.5).hbm_bytes < gemm(16, 4096, 4096, groups=1).hbm_bytes   # touched share


@pytest.mark.parametrize("block", [0, -64, 64.5, True, None, "128", 10**6])
def test_flash_tile_is_checked(block):
    """FlashTile(0, 0) divided by zero in every tile count (a RuntimeWarning and infinite bytes, or a
    ZeroDivisionError in the parallelism model)."""
    refused(lambda: FlashTile(block, 64), "block_q")
    refused(lambda: FlashTile(64, block), "block_kv")
    refused(lambda: flash_prefill(heads(), 1024, tile="128x128"), "tile")


# --- the walk: every entry point with every wrong kind of value --------------------------------------------------

class _Other:
    """An object of a class no entry point takes."""

    def __repr__(self) -> str:
        return "<_Other>"


#: Each wrong kind of value, by name. 'name' is a GPU or model name where a spec object is expected.
WRONG = {"none": None, "text": "h200", "bool": True, "nan": math.nan, "inf": math.inf, "zero": 0, "negative": -3,
         "1e300": 1e300, "huge": 10**400, "list": [1, 2], "complex": 3 + 0j, "object": _Other()}


def _entry_points():
    """(name, call, valid keyword arguments, {argument: kinds it accepts}) for the public entry points: rooflab's
    exports and the core modules' functions (cost, roofline, capacity, paging, numerics, report)."""
    from rooflab import load_gpu, load_model
    from rooflab.capacity import plan_capacity
    from rooflab.cudnn_kernel import (CUDNN_SHAPES_IMPL, CUDNN_TILE, causal_fraction, cudnn_cost, cudnn_head_dim,
                                      kernel_cost, modelled_impl)
    from rooflab.deployment import Deployment
    from rooflab.published import (Convention, KernelRow, convention_flops, load_published, published_dir,
                                   read_rows, read_sources)
    from rooflab.serve import step_times
    from rooflab.cost.cascade import breakeven_prefix_len, cascade_decode
    from rooflab.cost.flash import choose_tile
    from rooflab.cost.merge import merge_pair
    from rooflab.cost.paged import paged_decode, recommend_splits
    from rooflab.cost.parallel import parallel_fraction, schedule_fraction
    from rooflab.numerics import (dtype_limits, expected_max_normal, expected_max_normal_exact,
                                  softmax_headroom)
    from rooflab.paging import block_usage, fragmentation, pages_for, reusable_prefix_len, shared_prefix_blocks
    from rooflab.report import decode_report, prefill_report
    from rooflab.floors import Ceilings, floor
    from rooflab.units import DType

    gpu, model, h = load_gpu("h200"), load_model("llama-3-8b"), heads()
    cost = flash_prefill(h, 1024)
    ceilings = Ceilings.of(gpu, DType.bf16)
    arrays = {"list"}                        # an array argument takes a list of valid values
    optional = {"none"}
    switch = {"bool"}                        # True is a switch's value
    return [
        ("AttentionHeads", AttentionHeads, dict(num_qo_heads=32, num_kv_heads=8, head_dim=128), {}),
        ("naive_prefill", naive_prefill, dict(heads=h, seq_len=1024, batch=2, dtype="bf16", causal=True),
         {"seq_len": arrays, "batch": arrays, "causal": switch}),
        ("flash_prefill", flash_prefill, dict(heads=h, seq_len=1024, batch=2, dtype="bf16", causal=True, gpu=gpu,
                                              num_sms=132, units_per_sm=2.0, write_lse=True, sinks=False),
         {"seq_len": arrays, "batch": arrays, "gpu": optional, "num_sms": optional, "causal": switch,
          "write_lse": switch, "sinks": switch}),
        ("choose_tile", choose_tile, dict(gpu=gpu, head_dim=128, dtype="bf16"), {}),
        ("paged_decode", paged_decode, dict(heads=h, context_lens=[1024, 2048], page_size=16, dtype="bf16",
                                            kv_dtype="fp8_e4m3", num_splits=2, num_sms=132, units_per_sm=1.0, q_len=1),
         {"kv_dtype": optional, "num_sms": optional, "context_lens": arrays}),
        ("recommend_splits", recommend_splits, dict(heads=h, context_lens=[1024], num_sms=132, page_size=16),
         {"num_sms": optional, "context_lens": arrays}),
        ("merge_pair", merge_pair, dict(tokens=1024, num_heads=32, head_dim=128, dtype="bf16"), {"tokens": arrays}),
        ("cascade_decode", cascade_decode, dict(heads=h, prefix_len=1024, suffix_lens=[16, 32], page_size=16),
         {"suffix_lens": {"list", "zero"}}),     # a request may add no tokens to the prefix
        ("breakeven_prefix_len", breakeven_prefix_len, dict(heads=h, num_requests=8, page_size=16), {}),
        ("gemm", gemm, dict(m=16, n=4096, k=4096, dtype="bf16", weight_bits=4, groups=2),
         {"m": arrays, "n": arrays, "k": arrays, "groups": arrays, "weight_bits": optional}),
        ("parallel_fraction", parallel_fraction, dict(total_unit_work=800.0, longest_unit_work=100.0, num_sms=132,
                                                      units_per_sm=1.0),
         {"num_sms": optional, "total_unit_work": {"list", "zero", "1e300"}, "longest_unit_work": {"list", "1e300"}}),
        ("schedule_fraction", schedule_fraction, dict(unit_work=[1.0, 2.0, 3.0], num_sms=2, units_per_sm=1.0,
                                                      repeats=2),
         {"num_sms": optional, "unit_work": arrays}),
        ("Ceilings.of", Ceilings.of, dict(gpu=gpu, dtype="bf16"), {}),
        ("floor", floor, dict(cost=cost, ceilings=ceilings), {}),
        ("plan_capacity", plan_capacity, dict(model=model, gpu=gpu, context_len=8192, page_size=16,
                                              gpu_memory_utilization=0.9, tensor_parallel=1, shared_prefix_len=0),
         {"shared_prefix_len": {"zero"}}),
        ("block_usage", block_usage, dict(lengths=[100, 200], page_size=16), {"lengths": arrays}),
        ("fragmentation", fragmentation, dict(lengths=[100, 200], page_size=16, max_len=4096), {"lengths": arrays}),
        ("shared_prefix_blocks", shared_prefix_blocks, dict(prefix_len=1024, suffix_lens=[16, 32], page_size=16),
         {"prefix_len": {"zero"}, "suffix_lens": arrays}),
        ("reusable_prefix_len", reusable_prefix_len, dict(common_prefix_len=1000, page_size=16), {"common_prefix_len": {"zero"}}),
        ("pages_for", pages_for, dict(tokens=1000, page_size=16), {"tokens": {"zero"}}),
        ("prefill_report", prefill_report, dict(model=model, gpu=gpu, seq_len=4096, batch=1, dtype="bf16",
                                                causal=True), {"causal": switch}),
        ("decode_report", decode_report, dict(model=model, gpu=gpu, context_lens=[4096], page_size=16,
                                              dtype="bf16", splits=2), {"splits": optional, "context_lens": arrays}),
        ("softmax_headroom", softmax_headroom, dict(dtype="bf16", seq_len=4096, logit_std=1.0), {}),
        ("expected_max_normal", expected_max_normal, dict(n=4096), {}),
        ("expected_max_normal_exact", expected_max_normal_exact, dict(n=4096), {}),
        ("dtype_limits", dtype_limits, dict(dtype="bf16"), {}),
        ("load_gpu", load_gpu, dict(ref="h200"), {"ref": {"text"}}),      # 'h200' is a GPU's name
        ("load_model", load_model, dict(ref="llama-3-8b"), {}),
        ("convention_flops", convention_flops, dict(convention=Convention.fa, batch=1, num_qo_heads=32, seq_len_q=4096,
                                                    seq_len_kv=4096, head_dim=128, value_dim=128, causal=True),
         {"causal": switch}),
        ("load_published", load_published, dict(root=None), {"root": optional}),
        ("read_sources", read_sources, dict(path=None), {"path": optional}),
        ("read_rows", read_rows, dict(path=sorted((published_dir() / "kernels").glob("*.csv"))[0], kind=KernelRow,
                                      sources=read_sources()), {}),
        ("cudnn_head_dim", cudnn_head_dim, dict(head_dim=96), {}),
        ("causal_fraction", causal_fraction, dict(seq_len=4096, units=64, num_sms=132, tile=CUDNN_TILE,
                                                  units_per_sm=2.0), {}),
        ("cudnn_cost", cudnn_cost, dict(heads=h, seq_len=4096, batch=2, dtype="bf16", causal=True, gpu=gpu,
                                        write_lse=True, sinks=False),
         {"seq_len": arrays, "batch": arrays, "causal": switch, "write_lse": switch, "sinks": switch}),
        ("kernel_cost", kernel_cost, dict(model_impl=CUDNN_SHAPES_IMPL, cost=cost, gpu=gpu),
         {"model_impl": {"text"}}),          # any implementation id: 'h200' is one (its cost is returned as it is)
        ("modelled_impl", modelled_impl, dict(impl="torch_cudnn"), {"impl": {"text"}}),
        ("step_times", step_times, dict(model=model, gpu=gpu, deployment=Deployment(), max_decodes=16, min_context=128,
                                        max_context=4096, max_prefill=2048, moe_kernel="torch_grouped",
                                        decode_attention="shared"), {}),
    ]


def _cases():
    for name, call, kwargs, accepts in _entry_points():
        for argument in kwargs:
            for kind in WRONG:
                yield pytest.param(name, argument, kind, id=f"{name}-{argument}-{kind}")


_ENTRIES = None


def _entry(name):
    global _ENTRIES
    if _ENTRIES is None:
        _ENTRIES = {e[0]: e for e in _entry_points()}
    return _ENTRIES[name]


def test_each_entry_point_runs_on_its_valid_arguments():
    for name, call, kwargs, _ in _entry_points():
        call(**kwargs)


@pytest.mark.parametrize("name, argument, kind", list(_cases()))
def test_each_argument_refuses_each_wrong_kind(name, argument, kind):
    """The argument replaced by the wrong kind: a RooflabError whose message names the argument (its name, or the
    words the message uses for it), unless the entry lists the kind as valid there (then it runs)."""
    from rooflab.errors import RooflabError

    _, call, kwargs, accepts = _entry(name)
    args = dict(kwargs, **{argument: WRONG[kind]})
    if kind in accepts.get(argument, set()):
        call(**args)
        return
    with pytest.raises(RooflabError) as info:
        call(**args)
    message = str(info.value).lower()
    spoken = argument.replace("num_", "number of ").replace("_", " ").replace("utilization", "utilisation")
    words = {argument.lower(), spoken, *ALIASES.get((name, argument), ())}
    assert any(w in message for w in words), f"{argument!r} not named in: {info.value}"


#: How a message names an argument where not by its Python name.
ALIASES: dict[tuple[str, str], tuple[str, ...]] = {
    ("paged_decode", "context_lens"): ("context length",), ("recommend_splits", "context_lens"): ("context length",),
    ("decode_report", "context_lens"): ("context length",), ("cascade_decode", "suffix_lens"): ("suffix length",),
    ("shared_prefix_blocks", "suffix_lens"): ("suffix length",), ("load_gpu", "ref"): ("gpu",),
    ("load_model", "ref"): ("model",),
    ("load_published", "root"): ("cannot read",), ("read_sources", "path"): ("cannot read",),   # a file not there
    ("read_rows", "path"): ("cannot read",),
}


def test_zero_ceilings_are_refused():
    """Ceilings of 0 bytes or FLOPs a second divided by zero in the floors and the ridge point."""
    from rooflab.floors import Ceilings
    from rooflab.vocab import CeilingSource

    refused(lambda: Ceilings(CeilingSource.datasheet, 0.0, 1e15, 1e14, None), "bandwidth_bytes_per_s")
    refused(lambda: Ceilings(CeilingSource.datasheet, 4.8e12, 0, 1e14, None), "matmul_flop_per_s")
    refused(lambda: Ceilings(CeilingSource.datasheet, 4.8e12, 1e15, 1e14, 0.0), "exp_per_s")
    refused(lambda: Ceilings("datasheet", 4.8e12, 1e15, 1e14, None), "source")


def test_a_gpu_name_where_a_spec_is_expected_is_named():
    """A GPU name where a GpuSpec is expected was an AttributeError ('str' object has no attribute ...)."""
    from rooflab import load_model
    from rooflab.capacity import plan_capacity
    from rooflab.floors import Ceilings

    for call in (lambda: Ceilings.of("h200", "bf16"), lambda: plan_capacity(load_model("llama-3-8b"), "h200", 4096)):
        refused(call, "gpu", "GpuSpec", "load_gpu")


def test_decode_report_for_an_implementation_without_a_decode_fit_says_so():
    """`report --phase decode --impl torch_cudnn`: cuDNN has no decode fit on the H200; the report says so on each
    row's note instead of dropping the implementation without a word."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    result = CliRunner().invoke(app, ["report", "-m", "llama-3-8b", "-g", "h200", "--phase", "decode",
                                      "--impl", "torch_cudnn"])
    assert result.exit_code == 0
    assert "torch_cudnn has no fitted paged model" in result.output
