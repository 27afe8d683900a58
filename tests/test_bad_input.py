"""Bad input at the Python API's doors: specs, the YAML schema, counts and sizes, writes, bounded work.

The CLI's share is in the fuzz suite (tests/test_fuzz_*.py); these pin each door's behaviour once.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from rooflab import DType, load_gpu, load_model
from rooflab.capacity import plan_capacity
from rooflab.cost.paged import DecodeBatch, paged_decode, recommend_splits
from rooflab.errors import InputError, SpecError
from rooflab.load import parse_yaml
from rooflab.output import OutputError, json_text, write_atomic
from rooflab.report import decode_report
from rooflab.roofline import Ceilings
from rooflab.specs import AttentionHeads, GpuSpec
from rooflab.units import parse_bytes, parse_count


# --- specs are checked on every construction ---------------------------------------------------------

def test_replace_checks_the_new_value():
    gpu = load_gpu("h100-sxm")
    with pytest.raises(SpecError) as err:
        dataclasses.replace(gpu, hbm_bandwidth_bytes_per_s=-3.35e12)
    assert err.value.field == "hbm_bandwidth_bytes_per_s"


@pytest.mark.parametrize("field, value, needle", [
    ("hbm_bandwidth_bytes_per_s", 1e-300, ">="),        # passes "positive and finite", but is no GPU
    ("hbm_capacity_bytes", 1e307, "<="),
    ("num_sms", 132.5, "whole number"),
    ("num_sms", True, "whole number"),
    ("display_name", "", "non-empty"),
    ("units_per_sm", float("nan"), "finite"),
])
def test_implausible_gpu_values_are_refused(field, value, needle):
    gpu = load_gpu("h100-sxm")
    with pytest.raises(SpecError) as err:
        dataclasses.replace(gpu, **{field: value})
    assert err.value.field == field and needle in str(err.value)


def test_every_problem_is_reported_at_once():
    kwargs = {f.name: getattr(load_gpu("h100-sxm"), f.name) for f in dataclasses.fields(GpuSpec)}
    kwargs.update(num_sms=0, l2_bytes=-1, boost_clock_hz=float("inf"))
    with pytest.raises(SpecError) as err:
        GpuSpec(**kwargs)
    assert [p[0] for p in err.value.problems] == ["num_sms", "l2_bytes", "boost_clock_hz"]
    assert "3 problems" in str(err.value)


def test_specs_are_immutable_and_shared_safely():
    gpu = load_gpu("h100-sxm")
    with pytest.raises(TypeError):
        gpu.dense_tensor_flop_per_s["fp16"] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.num_sms = 1
    assert load_gpu("h100-sxm").dense_tensor_flop_per_s["fp16"] == 989.4e12


def test_heads_refuse_what_is_not_a_head_count():
    for bad in (0, -8, 8.5, True, "8"):
        with pytest.raises(SpecError):
            AttentionHeads(32, bad, 128)


def test_ceilings_take_their_names_and_refuse_others():
    gpu = load_gpu("h200-sxm")
    calibrated = Ceilings.of(gpu, "fp16", "calibrated")
    assert calibrated.bandwidth_bytes_per_s == gpu.measured.copy_bytes_per_s       # not the datasheet figure
    with pytest.raises(InputError):
        Ceilings.of(gpu, DType.fp16, "measured")


# --- the YAML schema -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["a: 0132", "a: 2:12", "a: 1_000", "a: 0x84", "a: yes", "a: off"])
def test_yaml_1_1_forms_are_refused_with_how_to_write_them(text):
    with pytest.raises(SpecError) as err:
        parse_yaml(text, "x.yaml")
    assert "ambiguous" in str(err.value) and "x.yaml" in str(err.value)


@pytest.mark.parametrize("text, value", [("a: 132", 132), ("a: 3.35e12", 3.35e12), ("a: 2026-11-30", "2026-11-30"),
                                         ("a: true", True), ("a: '0132'", "0132"), ("a: n", "n")])
def test_yaml_1_2_forms_read_as_written(text, value):
    assert parse_yaml(text, "x.yaml")["a"] == value


# --- counts and sizes as people write them -----------------------------------------------------------------

@pytest.mark.parametrize("text, value", [("8192", 8192), ("8_192", 8192), ("32k", 32_000), ("32K", 32_768),
                                         ("32Ki", 32_768), ("1M", 1 << 20), ("1m", 10**6), ("25.6k", 25_600)])
def test_counts(text, value):
    assert parse_count(text) == value       # vLLM's convention: lowercase decimal, uppercase binary


@pytest.mark.parametrize("text", ["abc", "1e9", "1.5K", "", "12.3"])
def test_bad_counts(text):
    with pytest.raises(ValueError):
        parse_count(text)


def test_sizes():
    assert parse_bytes("80GiB") == 80 * 2**30 and parse_bytes("192GB") == 192 * 10**9
    with pytest.raises(ValueError):
        parse_bytes("lots")


# --- JSON is strict; writes are atomic and never clobber inputs -------------------------------------------

def test_json_refuses_non_finite_numbers_and_names_where():
    with pytest.raises(OutputError) as err:
        json_text({"rows": [{"t_floor_s": float("inf")}]})
    assert "$.rows[0].t_floor_s" in str(err.value)


def test_atomic_write_refuses_input_folder_and_missing_folder(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("data")
    for target, needle in ((source, "overwrite an input"), (tmp_path, "is a folder"),
                           (tmp_path / "no" / "x.txt", "does not exist")):
        with pytest.raises(OutputError, match=needle):
            write_atomic(target, "new", inputs=[source])
    assert source.read_text() == "data" and sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


# --- bounded work -----------------------------------------------------------------------------------------

def test_a_huge_uniform_batch_is_priced_in_closed_form():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    start = time.perf_counter()
    big = decode_report(model, gpu, DecodeBatch.uniform(8192, 1 << 24))
    elapsed_s = time.perf_counter() - start
    one = decode_report(model, gpu, DecodeBatch.uniform(8192, 1))
    assert big.rows[0].kv_bytes == one.rows[0].kv_bytes * (1 << 24)
    assert big.context_lens is None and big.context_len_counts == ((8192, 1 << 24),)
    assert elapsed_s < 5       # a generous bound for a loaded CI machine: it is milliseconds, not minutes


def test_run_length_batch_prices_exactly_like_the_list():
    lens = [17, 900, 4096, 900, 17, 30000]
    heads = AttentionHeads(32, 8, 128)
    for splits in (1, 4, 17):
        a = paged_decode(heads, lens, 16, num_splits=splits, num_sms=132)
        b = paged_decode(heads, DecodeBatch(np.array([17.0, 900, 4096, 30000]), np.array([2.0, 2, 1, 1])), 16,
                         num_splits=splits, num_sms=132)
        assert float(a.hbm_bytes) == float(b.hbm_bytes) and float(a.parallel_fraction) == float(b.parallel_fraction)
    assert recommend_splits(heads, lens, 132) == recommend_splits(heads, DecodeBatch(
        np.array([17.0, 900, 4096, 30000]), np.array([2.0, 2, 1, 1])), 132)


@pytest.mark.parametrize("call, needle", [
    (lambda h: paged_decode(h, [8192], num_splits=10**9), "number of splits"),
    (lambda h: paged_decode(h, [8192] * 70_000), "one by one"),
    (lambda h: paged_decode(h, [1e18]), "<="),
    (lambda h: DecodeBatch.uniform(8192, 10**19), "batch"),
])
def test_workloads_past_any_deployment_are_refused_with_the_limit(call, needle):
    with pytest.raises(InputError, match=needle):
        call(AttentionHeads(32, 8, 128))


def test_capacity_refuses_a_prefix_as_long_as_the_context_and_nan_reserves():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    with pytest.raises(InputError, match="shorter than the context"):
        plan_capacity(model, gpu, 8192, shared_prefix_len=8192)
    for reserve in (float("nan"), float("inf"), -1):
        with pytest.raises(InputError, match="activation reserve"):
            plan_capacity(model, gpu, 8192, activation_reserve_bytes=reserve)


def test_yaml_reader_refuses_what_a_spec_never_needs(tmp_path):
    """Complex keys, aliases (billion laughs) and deep nesting: one-line errors naming the file, quickly."""
    import time

    from rooflab.errors import SpecError
    from rooflab.load import load_gpu

    laughs = ["name: x", 'a: &a ["lol", "lol"]'] + [f"{c}: &{c} [" + ", ".join([f"*{p}"] * 10) + "]"
                                                   for p, c in zip("abcdefghi", "bcdefghij")]
    cases = {"complex.yaml": ("name: x\n? [a, b]\n: 1\n", "not a plain name"),
             "laughs.yaml": ("\n".join(laughs) + "\n", "an alias"),
             "deep.yaml": ("a: " + "[" * 3000 + "\n", "nested too deeply")}
    for name, (text, needle) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        t0 = time.perf_counter()
        with pytest.raises(SpecError) as info:
            load_gpu(path)
        assert needle in str(info.value) and name in str(info.value) and time.perf_counter() - t0 < 5


def test_a_rewritten_spec_is_read_again(tmp_path):
    import os

    from rooflab.load import load_gpu

    path = tmp_path / "g.yaml"
    text = ("name: g\nhbm_capacity_bytes: 80e9\nhbm_bandwidth_bytes_per_s: 3.0e12\n"
            "dense_tensor_flop_per_s: {fp16: 900e12}\nvector_fp32_flop_per_s: 60e12\n")
    path.write_text(text)
    assert load_gpu(path).hbm_bandwidth_bytes_per_s == 3.0e12
    path.write_text(text.replace("3.0e12", "4.0e12"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert load_gpu(path).hbm_bandwidth_bytes_per_s == 4.0e12
