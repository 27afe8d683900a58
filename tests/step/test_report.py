"""Tests of rooflab/step/report.py: the whole-model step (step_report): its rows by hand, invariants, the measured
step it predicts, bad input, and predictions transferred from the H200 with their provenance."""

from __future__ import annotations

import pytest

from rooflab.cost.batch import DecodeBatch
from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.fit.records import read_measurements
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.step import step_report
from rooflab.units import DType

H200 = load_gpu("h200-sxm")
LLAMA = load_model("llama-3-8b")


def test_decode_rows_by_hand():
    r = step_report(LLAMA, H200, 1, 8192, dtype=DType.fp16)
    rows = {row.label.split(" (")[0].split(",")[0]: row for row in r.rows}
    proj = rows["attention projections"]
    assert proj.weight_bytes == 32 * (6144 * 4096 + 4096 * 4096) * 2            # QKV and O of 32 layers
    assert proj.calls == 64
    mlp = rows["MLP"]
    assert mlp.weight_bytes == 32 * 3 * 4096 * 14336 * 2
    assert rows["logits"].weight_bytes == 128256 * 4096 * 2
    attention = rows["attention [full]"]
    splits = int(attention.label.split(", ")[1].split(" ")[0])
    merge = 32 * (splits * (2 * 128 + 3) + 128)                               # the split-KV merge's vector FLOPs
    assert attention.flops == pytest.approx(32 * (4 * 32 * 128 * 8192 + merge))   # 4 h d L a layer
    # the step's floor: everything overlapped, never above one component after another
    assert r.t_floor_s <= r.t_floor_serial_s
    assert r.t_floor_s == pytest.approx(max(sum(x.t_memory_s for x in r.rows),
                                            sum(max(x.t_compute_s, x.t_exp_s) for x in r.rows)))
    assert r.t_predicted_s == pytest.approx(sum(x.t_predicted_s for x in r.rows))
    assert r.t_floor_s < r.t_predicted_s


def test_json_contract():
    d = step_report(LLAMA, H200, 8, 32768, tp=2, dtype=DType.bf16).to_dict()
    assert d["phase"] == "step" and d["t_floor_s"] > 0 and d["t_predicted_s"] > d["t_floor_s"]
    for row in d["rows"]:
        for key in ("variant", "flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s", "t_memory_s",
                    "t_floor_s", "bound", "t_predicted_s"):
            assert key in row
    comm = [row for row in d["rows"] if row["bound"] == "communication"]
    assert comm and all(row["intensity_flop_per_byte"] is None for row in comm)
    assert sum(row["calls"] for row in comm if row["variant"] == "all_reduce") == 64   # 2 all-reduces x 32 layers


def test_no_collective_fits_no_prediction_and_a_note_says_why():
    r = step_report(LLAMA, load_gpu("h100-sxm"), 8, 8192, tp=2)
    assert r.t_predicted_s is None and r.t_floor_s > 0
    blank = [row for row in r.rows if row.t_predicted_s is None]
    assert blank and all(row.variant in ("all_reduce", "all_gather") for row in blank)
    assert any(n.startswith("no prediction for all_reduce") and "not transferred" in n for n in r.notes)


def test_dcp_splits_the_kv_and_adds_the_gather():
    one = step_report(LLAMA, H200, 4, 131072, dtype=DType.fp16)
    two = step_report(LLAMA, H200, 4, 131072, dcp=2, dtype=DType.fp16)
    assert two.kv_bytes_per_gpu == pytest.approx(one.kv_bytes_per_gpu / 2)
    assert two.gpus == 2 and any("KVP" in row.label for row in two.rows)   # dcp= is KV parallelism
    assert two.t_predicted_s < one.t_predicted_s                   # attention dominates at 128k: DCP pays


def test_prefill_with_ring():
    r = step_report(load_model("llama-3.1-405b"), H200, 1, 131072, "prefill", tp=8, cp=2, dtype=DType.bf16)
    assert r.gpus == 16 and any(row.variant == "ring_prefill" for row in r.rows)
    assert r.t_predicted_s > r.t_floor_s


def test_bad_deployments_name_the_value():
    with pytest.raises(InputError, match="3 does not divide the 32 query heads"):
        step_report(LLAMA, H200, 1, 8192, tp=3)
    with pytest.raises(InputError, match="larger than the context in pages"):
        step_report(LLAMA, H200, 1, 64, dcp=8)
    with pytest.raises(InputError, match="--cp 2 splits a prefill"):
        step_report(LLAMA, H200, 1, 8192, "decode", cp=2)
    with pytest.raises(InputError, match="--dcp 2 splits a decode"):
        step_report(LLAMA, H200, 1, 8192, "prefill", dcp=2)
    with pytest.raises(InputError, match="does not fit"):
        step_report(LLAMA, H200, 64, 32768, dtype=DType.fp16)       # 256 GiB of KV on one H200
    with pytest.raises(InputError, match="does not fit"):
        step_report(load_model("llama-3.1-405b"), H200, 1, 8192)   # 810 GB of weights


def test_the_bundled_decode_steps_are_predicted_within_15_percent():
    # the target: the Llama-3-8B decode step on one H200, batch 1 / 8 / 64 x context 1k / 8k / 32k
    meta, rows = read_measurements(data_dir("measurements") / "h200x2-step.csv")
    assert meta["model"] == "llama-3-8b" and len(rows) == 9
    errors = []
    for m in rows:
        length, batch = map(int, m.context_lens.split("x"))
        torch_layer = Deployment(dtype=DType(m.dtype), fused_elementwise=False)   # the bench's unfused layer, a graph
        r = step_report(LLAMA, H200, batch, length, deployment=torch_layer, check_memory=False)
        errors.append(abs(r.t_predicted_s / m.time_s - 1))
        assert r.t_floor_s < m.time_s                                 # no measurement beats its floor
    assert max(errors) <= 0.15


@pytest.mark.parametrize("kwargs, named", [
    ({"dtype": "nope"}, "dtype"),                        # ValueError from the enum once
    ({"gemm_dtype": "x"}, "gemm_dtype"),
    ({"gpu_memory_utilization": "0.9"}, "utilisation"),  # '0.9' * bytes built a string until MemoryError
    ({"gpu_memory_utilization": float("nan")}, "utilisation"),
    ({"gpu_memory_utilization": 2}, "utilisation"),
    ({"check_memory": "no"}, "check_memory"),
    ({"page_size": 0}, "page size"),
])
def test_step_report_names_a_bad_argument(kwargs, named):
    with pytest.raises(InputError, match=named):
        step_report(load_model("llama-3-8b"), load_gpu("h100-sxm"), **kwargs)


def test_step_report_refuses_swapped_or_missing_specs():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    with pytest.raises(InputError, match="model"):
        step_report(gpu, model)
    with pytest.raises(InputError, match="gpu"):
        step_report(model, None)


def test_step_report_reads_whole_floats_as_ints():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    assert step_report(model, gpu, tp=2.0).tp == 2 and isinstance(step_report(model, gpu, tp=2.0).tp, int)


def test_deployed_settings_by_hand():
    """Hand computations of the deployed step (rooflab/step's package docstring)."""
    from rooflab.deployment import Speculative

    # speculative: tokens a step (1 - a^(k+1)) / (1 - a) (Leviathan et al., arXiv 2211.17192, eq. 1): k 3, a 0.7
    spec = Speculative("eagle", 3, 0.7)
    assert spec.tokens_per_step == pytest.approx((1 - 0.7 ** 4) / 0.3) and spec.query_tokens == 4
    r = step_report(LLAMA, H200, 4, 4096, deployment=Deployment(speculative=spec))
    assert r.q_len == 4 and r.t_per_output_token_s == pytest.approx(r.t_predicted_s / spec.tokens_per_step)
    assert any(row.variant == "draft" for row in r.rows)
    # MoE under EP 8 with attention DP 8: each GPU's 256 / 8 experts receive M k / EP pairs, M = 8 ranks x 4 tokens
    ds = load_model("deepseek-v3")
    r = step_report(ds, H200, 32, 1024, deployment=Deployment(tensor_parallel=8, attention_data_parallel=8,
                                                              expert_parallel=8))
    moe = next(row for row in r.rows if row.label.startswith("MoE ("))
    assert f"{32 * 8 // 8:,} token-expert pairs" in moe.label and "of 32 experts" in moe.label
    assert sum(row.calls for row in r.rows if row.variant == "all_to_all") == 2 * ds.num_moe_layers
    # eager: every launch at least its host issue time
    r = step_report(LLAMA, H200, 1, 1024, deployment=Deployment(cuda_graphs=False))
    proj = r.rows[0]
    assert proj.t_predicted_s >= proj.calls * H200.measured.launch.eager_host_s
    # pipeline 2 stages, 2 micro-batches: a decode step is max(M, PP) stage times
    r = step_report(load_model("llama-3-70b"), H200, 8, 1024, deployment=Deployment(pipeline_parallel=2))
    assert r.stage_slots == 2 and r.t_predicted_s == pytest.approx(2 * sum(x.t_predicted_s for x in r.rows))


# --- predictions transferred from the H200 (rooflab.predict.predict_time, rooflab.transfer) -----------------------

def test_a_step_on_a_gpu_without_fits_is_predicted_from_the_h200s_with_provenance():
    from rooflab.render_step import render_step

    h100 = load_gpu("h100-sxm")
    r = step_report(LLAMA, h100, 8, 8192)
    assert r.t_predicted_s is not None and all(row.t_predicted_s is not None for row in r.rows)
    assert {row.predicted_from for row in r.rows} == {"transferred from h200-sxm"}
    assert any("transferred to h100-sxm as measured" in n for n in r.notes)          # the small kernels' tables
    bands = [n for n in r.notes if n.startswith("t_predicted ") and "error band" in n]
    assert {n.split()[1] for n in bands} == {"rooflab", "torch_cublas"} and all("assumes" in n for n in bands)
    text = render_step(r)
    assert "fitted on" in text and "h200-sxm" in text and "t_predicted -" not in text


def test_the_h200_step_is_its_own_fits_unchanged():
    r = step_report(LLAMA, H200, 8, 8192)
    assert {row.predicted_from for row in r.rows} == {"measured on this GPU"}
    assert not any("transferred" in n for n in r.notes)


def test_a_transferred_step_row_is_the_report_rows_prediction():
    # the step's attention row goes through predict_time as the report's rows do: the same transferred time
    from rooflab.cost.layers import layer_decode, layer_splits
    from rooflab.predict import OWN, decode_kernel, predict_time

    h100, lens = load_gpu("h100-sxm"), DecodeBatch.uniform(8192, 8)
    s = layer_splits(LLAMA, "full", lens, h100.num_sms, 16, DType.bf16, DType.bf16, h100.units_per_sm)
    p = predict_time(h100, decode_kernel(LLAMA.layer_types["full"], s), lambda n, u: layer_decode(
        LLAMA, "full", lens, 16, DType.bf16, DType.bf16, s, 1, n, u), DType.bf16, OWN)
    row = next(r for r in step_report(LLAMA, h100, 8, 8192).rows if r.variant in ("paged", "split_kv"))
    assert row.t_predicted_s == pytest.approx(LLAMA.num_layers * p.t_predicted_s)
    assert row.predicted_from == p.provenance == "transferred from h200-sxm"


def test_where_nothing_transfers_every_blank_row_has_its_reason():
    r = step_report(LLAMA, load_gpu("mi300x"), 8, 8192)
    assert r.t_predicted_s is None
    blank = [n for n in r.notes if n.startswith("no prediction for")]
    assert any(n.startswith("no prediction for gemm") and "mi300x" in n for n in blank)
    assert any(n.startswith("no prediction for split_kv") and "mi300x" in n for n in blank)
    assert any(n.startswith("no prediction for norms and elementwise") and "amd" in n for n in blank)
    assert all(row.t_predicted_s is not None or row.predicted_from is None for row in r.rows)


def test_the_degrees_take_the_deployments_names_and_their_old_spellings():
    """step_report's tp / dcp / cp are the Deployment's tensor_parallel / kv_parallel / prefill_context_parallel
    (one name a degree, issue 26); the old spellings give the same step, and both at once is refused."""
    import pytest

    from rooflab.errors import InputError
    from rooflab.load import load_gpu, load_model
    from rooflab.step import step_report

    model, gpu = load_model("llama-3-70b"), load_gpu("h200-sxm")
    new = step_report(model, gpu, batch=8, context_len=4096, tensor_parallel=4, kv_parallel=2)
    old = step_report(model, gpu, batch=8, context_len=4096, tp=4, dcp=2)
    assert new.to_dict() == old.to_dict()
    assert new.to_dict()["kv_parallel"] == 2
    prefill = step_report(model, gpu, batch=1, context_len=8192, step="prefill", tensor_parallel=4,
                          prefill_context_parallel=2)
    assert prefill.to_dict() == step_report(model, gpu, batch=1, context_len=8192, step="prefill", tp=4,
                                            cp=2).to_dict()
    with pytest.raises(InputError, match="tensor_parallel or its old spelling tp"):
        step_report(model, gpu, batch=8, context_len=4096, tensor_parallel=4, tp=2)


def test_micro_batches_need_pipeline_stages():
    """--micro-batches without --pp priced one micro-batch of the batch (a batch-1 step reported as batch 4)."""
    dep = Deployment(tensor_parallel=2)
    with pytest.raises(InputError, match=r"micro-batches \(--micro-batches 4\).*--pp"):
        step_report(LLAMA, H200, 4, 4096, deployment=dep, micro_batches=4)
    one = step_report(LLAMA, H200, 4, 4096, deployment=dep, micro_batches=1)      # one micro-batch: the batch
    assert one.t_predicted_s == step_report(LLAMA, H200, 4, 4096, deployment=dep).t_predicted_s


def test_expert_imbalance_needs_moe_layers():
    with pytest.raises(InputError, match=r"expert imbalance \(--expert-imbalance 3\) applies to MoE layers"):
        step_report(LLAMA, H200, 4, 4096, expert_imbalance=3)
    assert step_report(LLAMA, H200, 4, 4096, expert_imbalance=1).t_floor_s > 0


def test_the_json_keys_are_the_options_names():
    """The old keys dcp / cp (rooflab 0.1's KV and prefill context parallelism) read as --dcp: not in the JSON."""
    d = step_report(load_model("llama-3.1-405b"), H200, 8, 8192,
                    deployment=Deployment(tensor_parallel=16, decode_context_parallel=2)).to_dict()
    assert "dcp" not in d and "cp" not in d
    assert (d["decode_context_parallel"], d["kv_parallel"], d["prefill_context_parallel"]) == (2, 1, 1)


def test_a_gpu_without_an_exp_rate_gives_unknown_exp_times_not_zero():
    """The MI355X's spec gives no exp rate: the step's JSON rows said t_exp_s 0.0 (report --phase decode: null)."""
    d = step_report(LLAMA, load_gpu("mi355x"), 8, 8192).to_dict()
    assert d["exp_per_s"] is None and all(row["t_exp_s"] is None for row in d["rows"] if "t_exp_s" in row)
    h200 = step_report(LLAMA, H200, 8, 8192).to_dict()
    assert h200["exp_per_s"] > 0 and any((row.get("t_exp_s") or 0) > 0 for row in h200["rows"])


def test_the_csv_columns_are_the_options_names():
    """The CSV kept rooflab 0.1's dcp / cp columns, empty whatever --dcp said."""
    import csv
    import io

    from rooflab.output import Format
    from rooflab.render_step import render_step

    r = step_report(load_model("llama-3.1-405b"), H200, 8, 8192,
                    deployment=Deployment(tensor_parallel=16, decode_context_parallel=2))
    rows = list(csv.DictReader(io.StringIO(render_step(r, Format.csv))))
    assert "dcp" not in rows[0] and "cp" not in rows[0]
    assert {(row["decode_context_parallel"], row["kv_parallel"], row["prefill_context_parallel"]) for row in rows} \
        == {("2", "1", "1")}


def test_a_prefill_chunk_longer_than_the_models_context_is_refused():
    """One prompt's chunk is never longer than the model's max_context_len (vLLM refuses a prompt longer than
    max_model_len: vllm 0.29.0 v1/engine/input_processor.py:453-470); a 2**31 chunk had been scheduled tile by tile
    for minutes. At the limit the step prices in well under a second (its launches' tiles in closed form or a
    remembered schedule)."""
    import time

    with pytest.raises(InputError, match=r"--prefill-chunk 8,193 .* maximum context of 8,192"):
        step_report(LLAMA, H200, 1, 1, prefill_tokens=LLAMA.max_context_len + 1)
    with pytest.raises(InputError, match="--prefill-chunk"):
        step_report(LLAMA, H200, 1, 1, prefill_tokens=2 ** 31)
    start = time.perf_counter()
    r = step_report(LLAMA, H200, 1, 1, prefill_tokens=LLAMA.max_context_len)
    assert time.perf_counter() - start < 1.0 and r.t_predicted_s > 0


def _rows_but_the_label(report):
    return [(r.variant, r.label if r.variant != "sampling" else "", r.t_floor_s, r.t_predicted_s, r.predicted_impl,
             r.source) for r in report.rows]


@pytest.mark.parametrize("tp, batch, context, step, chunk", [
    (1, 257, 512, "decode", 0), (1, 8, 8192, "decode", 0), (1, 2, 512, "prefill", 0), (1, 8, 1024, "decode", 256),
    (2, 300, 2048, "decode", 0),                  # TP 2: the all-reduces at their eager fit
])
def test_v0_outside_its_graphs_is_priced_as_without_cuda_graphs(tp, batch, context, step, chunk):
    """Where vLLM V0 runs the model eagerly (work.step_graphed: past 256 sequences, a sequence past 8,192 tokens, a
    prefill, a mixed step), every row is the row of the same step without CUDA graphs (--enforce-eager: eager
    launches, eager collectives), the sampler's label saying why; StepReport.cuda_graph False and a note."""
    dep = Deployment(tensor_parallel=tp)
    kw = dict(step=step, prefill_tokens=chunk, engine="vllm", engine_version="0.7.3", check_memory=False)
    graphs = step_report(LLAMA, H200, batch, context, deployment=dep, **kw)
    eager = step_report(LLAMA, H200, batch, context, deployment=Deployment(tensor_parallel=tp, cuda_graphs=False),
                        **kw)
    assert _rows_but_the_label(graphs) == _rows_but_the_label(eager)
    assert graphs.t_predicted_s == eager.t_predicted_s and graphs.cuda_graph is False
    assert "the model eager: V0 replays its graph" in graphs.rows[-1].label
    assert any(n.startswith("the model runs eagerly this step") for n in graphs.notes)
    if tp > 1:
        assert any("(eager)" in r.source for r in graphs.rows if r.is_communication)


def test_v0_inside_its_graphs_keeps_the_graph_launch_times():
    """256 sequences at 8,191 tokens of context (8,192 with the decoded token): V0's largest graph; every row but
    the sampler's is the same step's under vLLM V1 (graphed too), whose sampler is another."""
    v0 = step_report(LLAMA, H200, 256, 8191, engine="vllm", engine_version="0.7.3", check_memory=False)
    v1 = step_report(LLAMA, H200, 256, 8191, engine="vllm", engine_version="0.11.2", check_memory=False)
    assert v0.cuda_graph is True and not any("runs eagerly" in n for n in v0.notes)
    assert _rows_but_the_label(v0)[:-1] == _rows_but_the_label(v1)[:-1]
    norms = next(r for r in v0.rows if r.variant == "elementwise")
    assert norms.predicted_impl == "torch_graph"
