"""Tensor-parallel capacity, prefix sharing in the planner, and the DataFrame views notebooks use."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rooflab import DType, load_gpu, load_model
from rooflab.bench.records import read_measurements
from rooflab.bench.validate import validate
from rooflab.capacity import plan_capacity, smallest_deployment, tensor_parallel_sizes
from rooflab.cli import app
from rooflab.cost.naive import naive_max_seq_len, naive_prefill
from rooflab.errors import InputError
from rooflab.load import data_dir
from rooflab.paging import shared_prefix_blocks
from rooflab.report import decode_report, prefill_report
from rooflab.units import KiB

runner = CliRunner()
LLAMA8 = load_model("llama-3-8b")
LLAMA70 = load_model("llama-3-70b")
H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


# --- sharding heads ---------------------------------------------------------------------------

@pytest.mark.parametrize("tp, qo, kv", [(1, 64, 8), (2, 32, 4), (4, 16, 2), (8, 8, 1), (16, 4, 1), (32, 2, 1)])
def test_shard_splits_query_heads_and_replicates_kv_heads_past_h_kv(tp, qo, kv):
    heads = LLAMA70.heads.shard(tp)
    assert (heads.num_qo_heads, heads.num_kv_heads, heads.head_dim) == (qo, kv, 128)


@pytest.mark.parametrize("tp, needle", [(0, "whole number"), (3, "query heads"), (True, "whole number"),
                                        (2.0, "whole number")])
def test_shard_bad_sizes(tp, needle):
    with pytest.raises(InputError, match=needle):
        LLAMA70.heads.shard(tp)


def test_shard_needs_an_even_kv_split():
    # 40 query heads and 8 KV heads (made up): tp 5 divides the query heads but not the KV heads,
    # and tp 20 is past h_kv without being a multiple of it
    from rooflab.specs import AttentionHeads
    heads = AttentionHeads(40, 8, 128)
    with pytest.raises(InputError, match="KV heads"):
        heads.shard(5)
    with pytest.raises(InputError, match="replicated"):
        heads.shard(20)


def test_tensor_parallel_sizes():
    assert tensor_parallel_sizes(LLAMA70, 16) == [1, 2, 4, 8, 16]
    assert tensor_parallel_sizes(LLAMA8) == [1, 2, 4, 8]


def test_kv_bytes_per_token_per_gpu():
    # 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 320 KiB for Llama-3-70B in fp16, split by KV head
    assert LLAMA70.kv_bytes_per_token(DType.fp16) == 320 * KiB
    assert LLAMA70.kv_bytes_per_token(DType.fp16, 4) == 80 * KiB
    assert LLAMA70.kv_bytes_per_token(DType.fp16, 8) == 40 * KiB
    # past h_kv every GPU still holds one whole KV head: no further saving per GPU
    assert LLAMA70.kv_bytes_per_token(DType.fp16, 16) == 40 * KiB


# --- the planner with tensor parallelism ----------------------------------------------------

def test_tensor_parallel_plan_is_per_gpu():
    one = plan_capacity(LLAMA8, H100, 4096)
    two = plan_capacity(LLAMA8, H100, 4096, tensor_parallel=2)
    assert two.tensor_parallel == 2 and two.kv_heads_per_gpu == 4
    assert two.weights_bytes == -(-LLAMA8.total_parameters * 2 // 2)
    assert two.kv_bytes_per_token == one.kv_bytes_per_token // 2
    assert two.kv_budget_bytes == two.usable_bytes - two.weights_bytes
    # half the KV per GPU and more budget per GPU: more than twice the sequences
    assert two.max_sequences_paged > 2 * one.max_sequences_paged


def test_seventy_b_needs_two_h100s_and_gains_sequences_with_more():
    with pytest.raises(InputError, match="do not fit"):
        plan_capacity(LLAMA70, H100, 8192)
    with pytest.raises(InputError, match="split 2 ways"):
        plan_capacity(LLAMA70, H100, 8192, gpu_memory_utilization=0.5, tensor_parallel=2)
    smallest = smallest_deployment(LLAMA70, H100, 8192)
    assert smallest.tensor_parallel == 2 and smallest.max_sequences_paged >= 1
    plans = [plan_capacity(LLAMA70, H100, 8192, tensor_parallel=tp) for tp in (2, 4, 8)]
    seqs = [p.max_sequences_paged for p in plans]
    assert seqs == sorted(seqs) and seqs[-1] > 10 * seqs[0]


def test_smallest_deployment_when_nothing_fits():
    with pytest.raises(InputError, match="up to 8 x h100-sxm"):
        smallest_deployment(load_model("llama-3.1-405b"), H100, 8192, gpu_memory_utilization=0.3)


def test_naive_ceiling_with_tensor_parallel_is_per_gpu():
    limit = naive_max_seq_len(LLAMA70, H200, tensor_parallel=4)
    heads = LLAMA70.heads.shard(4)
    free = H200.hbm_capacity_bytes - LLAMA70.total_parameters * 2 / 4
    assert float(naive_prefill(heads, limit).working_set_bytes) <= free
    assert float(naive_prefill(heads, limit + 1).working_set_bytes) > free
    assert naive_max_seq_len(LLAMA8, H100, tensor_parallel=1) == 23215   # the foundation's H100 figure


# --- prefix sharing in the planner --------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(prefix=st.integers(0, 6000), extra=st.integers(1, 6000), page=st.sampled_from([1, 16, 256]),
       reserve_gib=st.integers(0, 50))
def test_shared_prefix_sequences_are_the_most_the_blocks_hold(prefix, extra, page, reserve_gib):
    context = prefix + extra
    plan = plan_capacity(LLAMA8, H100, context, page_size=page, shared_prefix_len=prefix,
                         activation_reserve_bytes=reserve_gib * 2**30)
    n = plan.max_sequences_shared_prefix
    # counted independently with the block accounting of paging.py
    if n:
        assert shared_prefix_blocks(prefix, [extra] * n, page).total_blocks <= plan.num_blocks
    assert shared_prefix_blocks(prefix, [extra] * (n + 1), page).total_blocks > plan.num_blocks
    assert n >= plan.max_sequences_paged


def test_no_prefix_means_no_change_and_bad_prefix_is_refused():
    plan = plan_capacity(LLAMA8, H100, 4096)
    assert plan.shared_prefix_len == 0 and plan.max_sequences_shared_prefix == plan.max_sequences_paged
    with pytest.raises(InputError, match="shared prefix"):
        plan_capacity(LLAMA8, H100, 4096, shared_prefix_len=5000)


def test_shared_prefix_saved_slots():
    # flash-and-paged, prefix reuse: only whole pages of the prefix are shared
    s = shared_prefix_blocks(7, [1, 1], page_size=4)
    assert (s.shared_blocks, s.private_blocks, s.unshared_blocks) == (1, 2, 4)
    assert s.saved_blocks == 1 and s.saved_slots == 4 and s.saving == pytest.approx(0.25)


# --- CLI -----------------------------------------------------------------------------------

def test_capacity_cli_tensor_parallel_and_prefix():
    r = runner.invoke(app, ["capacity", "-m", "llama-3-70b", "-g", "h100-sxm", "--tp", "4",
                            "--shared-prefix", "1000", "-L", "4096", "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["tensor_parallel"] == 4 and data["kv_heads_per_gpu"] == 2
    assert data["max_sequences_shared_prefix"] > data["max_sequences_paged"]
    table = runner.invoke(app, ["capacity", "-m", "llama-3-70b", "--tp", "8"]).stdout
    assert "8 x h100-sxm" in table and "per GPU" in table


@pytest.mark.parametrize("args, needle", [
    (["--tp", "3"], "does not divide the 32 query heads"),
    (["--shared-prefix", "9000"], "shared prefix"),
    (["-m", "llama-3-70b"], "do not fit"),
])
def test_capacity_cli_bad_sharding(args, needle):
    r = runner.invoke(app, ["capacity", *args])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and needle in r.stderr and "Traceback" not in r.stderr


# --- DataFrame views ----------------------------------------------------------------------------

def test_report_to_frame_matches_rows():
    report = prefill_report(LLAMA8, H100)
    frame = report.to_frame()
    assert list(frame.index) == ["naive", "flash"]
    for row in report.rows:
        assert frame.loc[row.variant, "hbm_bytes"] == row.hbm_bytes
        assert frame.loc[row.variant, "t_floor_s"] == row.t_floor_s
    assert frame.loc["flash", "tile"] == "{}x{}".format(*report.rows[1].tile)
    launches = report.to_frame(breakdown=True)
    assert list(launches.index) == [("naive", "qk"), ("naive", "softmax"), ("naive", "pv")]
    assert launches["hbm_bytes"].sum() == pytest.approx(frame.loc["naive", "hbm_bytes"])
    decode = decode_report(LLAMA8, H200, [32768], splits=8).to_frame()
    assert list(decode.index) == ["paged", "split_kv (8 splits)"]


def test_validation_frames():
    path = data_dir("measurements") / "h200-sweep.csv"
    _, measurements = read_measurements(path)
    v = validate(path)
    summary = v.summary_frame()
    assert len(summary) == len(v.groups)
    for g in v.groups:
        assert summary.loc[(g.kernel, g.impl), "rows"] == g.rows
        if g.median_error is not None:
            assert summary.loc[(g.kernel, g.impl), "median_error"] == g.median_error
    rows = v.rows_frame()
    assert len(rows) == len(measurements)
    assert set(rows["config"]) == {m.describe() for m in measurements}
    # peers on one shape share it, so a pivot lines them up
    assert {m.shape() for m in measurements} == set(rows["shape"])
    flash = rows[(rows.kernel == "flash")].pivot_table(index="shape", columns="impl", values="measured_s")
    assert {"rooflab", "rooflab_hopper", "torch_flash", "torch_cudnn"} <= set(flash.columns)
    assert flash[["rooflab", "rooflab_hopper"]].notna().sum(axis=1).eq(1).all()   # one of rooflab's kernels per shape
    # the workload columns come from the measurement each row was predicted from
    by_config = {m.describe(): m for m in measurements}
    for record in rows.to_dict("records"):
        m = by_config[record["config"]]
        assert (record["splits"], record["context_lens"], record["seq_len"]) == (m.splits, m.context_lens, m.seq_len)
    assert "measurement" not in v.to_dict()["rows"][0]


# --- charts -----------------------------------------------------------------------------------

def _bar_widths(fig, i):
    return {p.get_gid().split(":")[2]: p.get_width() for p in fig.axes[0].patches if p.get_gid().startswith(f"bar:{i}:")}


def test_budget_chart_bars_are_the_plans():
    from rooflab.plot import budget_chart
    from rooflab.units import GiB
    plans = [plan_capacity(LLAMA8, H100, 8192),
             plan_capacity(LLAMA70, H200, 8192, tensor_parallel=4, activation_reserve_bytes=8 * GiB)]
    fig = budget_chart(plans)
    for i, plan in enumerate(plans):
        bars = _bar_widths(fig, i)
        assert bars["weights"] == pytest.approx(plan.weights_bytes / GiB)
        assert bars["KV budget"] == pytest.approx(plan.kv_budget_bytes / GiB)
        assert sum(bars.values()) == pytest.approx(plan.hbm_bytes / GiB)
    assert "activation reserve" not in _bar_widths(fig, 0)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["llama-3-8b on h100-sxm", "llama-3-70b on 4 x h200-sxm"]
    with pytest.raises(ValueError):
        budget_chart([])


def test_capacity_sweep_with_tensor_parallel():
    from rooflab.plot import capacity_chart, capacity_sweep
    sweep = capacity_sweep(LLAMA70, H200, tensor_parallel=4)
    at = int(sweep.context_lens.tolist().index(4096))
    assert sweep.paged[at] == plan_capacity(LLAMA70, H200, 4096, tensor_parallel=4).max_sequences_paged
    assert "4 x" in capacity_chart(sweep).axes[0].get_title(loc="left")
