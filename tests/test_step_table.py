"""rooflab.step_table: the tabulated step against step_report itself, at grid points (equal) and off the grid
(within OFF_GRID: linear interpolation between geometric grid points, a split-count or tile change the largest
error), vectorised, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.deployment import Deployment, Speculative
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.step import step_report
from rooflab.step_table import StepTable

H200 = load_gpu("h200-sxm")
LLAMA = load_model("llama-3-8b")
#: Off-grid tolerance: interpolating between grid points 1.25x (tokens) and 1.5x (decode grid) apart.
OFF_GRID = 0.03


@pytest.fixture(scope="module")
def table():
    return StepTable.build(LLAMA, H200, Deployment(), max_decodes=64, max_context=8192, max_prefill=2048)


def _report(d, length, p, dep=Deployment()):
    if d == 0:
        return step_report(LLAMA, H200, 1, p, "prefill", deployment=dep, check_memory=False)
    return step_report(LLAMA, H200, d, length, deployment=dep, prefill_tokens=p, check_memory=False)


def test_grid_points_reproduce_step_report(table):
    on_all = sorted(set(table.decodes_grid) & set(table.tokens_grid) & set(table.sequences_grid))
    for d in on_all[:3] + on_all[-1:]:
        for length in table.context_grid[::4]:
            floor, pred = table.time_s(d, d * length, 0)
            r = _report(int(d), int(length), 0)
            assert float(floor) == pytest.approx(r.t_floor_s, rel=1e-9)
            assert float(pred) == pytest.approx(r.t_predicted_s, rel=1e-9)
    for p in sorted(set(table.prefill_grid) & set(table.tokens_grid))[::5]:
        floor, pred = table.time_s(0, 0, p)
        r = _report(0, 0, int(p))
        assert float(pred) == pytest.approx(r.t_predicted_s, rel=1e-9)


@pytest.mark.parametrize("d, length, p", [(3, 1000, 0), (37, 3000, 0), (50, 7000, 0), (13, 5000, 700),
                                          (0, 0, 1500), (20, 2500, 333)])
def test_off_grid_within_tolerance(table, d, length, p):
    floor, pred = table.time_s(d, d * length, p)
    r = _report(d, length, p)
    assert float(floor) == pytest.approx(r.t_floor_s, rel=OFF_GRID)
    assert float(pred) == pytest.approx(r.t_predicted_s, rel=OFF_GRID)


def test_vectorised_and_broadcast(table):
    d = np.array([[1, 8], [16, 64]])
    floor, pred = table.time_s(d, d * 4096, 0)
    assert floor.shape == pred.shape == (2, 2)
    assert np.all(np.diff(pred.ravel()) > 0) and np.all(floor < pred)
    one = [float(table.time_s(x, x * 4096, 0)[1]) for x in d.ravel()]
    assert np.allclose(pred.ravel(), one)


def test_speculative_table_matches_the_verify_step():
    dep = Deployment(speculative=Speculative("eagle", 3, 0.7))
    t = StepTable.build(LLAMA, H200, dep, max_decodes=16, max_context=4096, max_prefill=64)
    assert t.q_len == 4
    pred = float(t.time_s(5, 5 * 3000, 0)[1])
    assert pred == pytest.approx(step_report(LLAMA, H200, 5, 3000, deployment=dep, check_memory=False).t_predicted_s,
                                 rel=OFF_GRID)


def test_refusals(table):
    with pytest.raises(InputError, match="outside the table's grid"):
        table.time_s(65, 65 * 100, 0)
    with pytest.raises(InputError, match="at least one"):
        table.time_s(0, 0, 0)
    with pytest.raises(InputError, match=">= 0"):
        table.time_s(-1, 10, 0)
    with pytest.raises(InputError, match="pipeline"):
        StepTable.build(load_model("llama-3-70b"), H200, Deployment(pipeline_parallel=2))


def test_a_lazy_table_prices_the_points_it_reads_and_nothing_else_differs(table):
    """StepTable.build(lazy=True) prices a grid point when time_s first reads it: the same numbers as the eager
    table, at grid points and off them, and complete() fills in the rest to the eager table's arrays."""
    lazy = StepTable.build(LLAMA, H200, Deployment(), max_decodes=64, max_context=8192, max_prefill=2048, lazy=True)
    assert np.isnan(lazy.tokens_parts[-1]).all()                 # not priced yet
    rng = np.random.default_rng(5)
    d = rng.integers(0, 65, 200).astype(float)
    c = d * rng.uniform(16, 8192, 200)
    p = np.where(d == 0, rng.integers(1, 2049, 200), rng.integers(0, 2049 - 64, 200)).astype(float)
    for got, want in zip(lazy.time_s(d, c, p), table.time_s(d, c, p)):
        assert got.tolist() == want.tolist()
    lazy.complete()
    for part in ("tokens_parts", "sequences_parts", "decode_parts", "prefill_parts"):
        assert np.array_equal(getattr(lazy, part), getattr(table, part), equal_nan=True)


@pytest.mark.parametrize("model, gpu, tp", [("llama-3-8b", "h200-sxm", 1), ("llama-3-70b", "h100-sxm", 8),
                                            ("llama-3-8b", "h100-sxm", 1), ("qwen3-30b-a3b", "h200-sxm", 2)])
def test_whether_the_tokens_rows_have_fits_does_not_depend_on_their_count(model, gpu, tp):
    """StepTable.predicts reads the first tokens point only: at every point the predicted column is a number,
    or at none."""
    t = StepTable.build(load_model(model), load_gpu(gpu), Deployment(tensor_parallel=tp), max_decodes=32,
                        max_context=4096, max_prefill=4096)
    missing = np.isnan(t.tokens_parts[:, 3])
    assert missing.all() or not missing.any()
    assert t.predicts == (not missing.any())


def test_a_table_without_predictions_prices_floors_alone_and_the_same_floors(monkeypatch):
    """On an H100 at TP 8 (no collective fit of its link: the step has no prediction) the table stops calling
    predict_time after its first points, and its floors equal a table priced with every prediction."""
    import numpy as np

    import rooflab.step.pricing as pricing
    from rooflab.deployment import Deployment
    from rooflab.load import load_gpu, load_model
    from rooflab.step_table import StepTable

    model, gpu = load_model("llama-3-70b"), load_gpu("h100-sxm")
    deployment = Deployment(tensor_parallel=8)
    calls = []
    real = pricing.predict_time
    monkeypatch.setattr(pricing, "predict_time", lambda *a, **k: calls.append(1) or real(*a, **k))
    table = StepTable.build(model, gpu, deployment, max_decodes=64, max_context=4096, max_prefill=2048, lazy=True)
    first = len(calls)
    assert not table.predicts and first > 0
    table.complete()
    assert len(calls) == first                                    # no prediction priced past the first points
    monkeypatch.setattr(pricing.Pricer, "floors_only", property(lambda self: False, lambda self, v: None))
    every = StepTable.build(model, gpu, deployment, max_decodes=64, max_context=4096, max_prefill=2048)
    assert len(calls) > first
    for part in ("tokens_parts", "sequences_parts", "decode_parts", "prefill_parts"):
        assert np.array_equal(getattr(table, part)[..., :3], getattr(every, part)[..., :3]), part   # the floors
    d, c = np.array([1, 8, 64]), np.array([1024, 8 * 2048, 64 * 4096])
    assert np.array_equal(table.time_s(d, c, 512)[0], every.time_s(d, c, 512)[0])
    assert np.isnan(table.time_s(d, c, 512)[1]).all() and np.isnan(every.time_s(d, c, 512)[1]).all()


@pytest.mark.parametrize("kernel", ["tuned", "default_config"])
def test_a_table_prices_the_experts_as_the_kernel_it_is_given(kernel):
    """Mixtral-8x7B TP 2: a table built with moe_kernel reproduces step_report's step with the same kernel at its
    grid points; a tuned kernel (the dense cuBLAS fit on the experts' work) is faster than torch's grouped GEMM,
    the default, with the same floor; default_config is priced as the default (rooflab.step.moe_kernel)."""
    mixtral, dep = load_model("mixtral-8x7b"), Deployment(tensor_parallel=2)
    table = StepTable.build(mixtral, H200, dep, max_decodes=16, max_context=2048, max_prefill=256, lazy=True,
                            moe_kernel=kernel)
    plain = StepTable.build(mixtral, H200, dep, max_decodes=16, max_context=2048, max_prefill=256, lazy=True)
    assert table.moe_kernel == kernel and plain.moe_kernel == "torch_grouped"
    d = int(sorted(set(table.decodes_grid) & set(table.tokens_grid) & set(table.sequences_grid))[-1])
    length = int(table.context_grid[2])
    floor, pred = table.time_s(d, d * length, 0)
    report = step_report(mixtral, H200, d, length, deployment=dep, check_memory=False, moe_kernel=kernel)
    assert float(pred) == pytest.approx(report.t_predicted_s, rel=1e-9)
    floor0, pred0 = plain.time_s(d, d * length, 0)
    assert float(floor) == pytest.approx(float(floor0), rel=1e-12)
    if kernel == "tuned":
        assert float(pred) < 0.9 * float(pred0)
    else:
        assert float(pred) == pytest.approx(float(pred0), rel=1e-12)


def test_an_mla_table_prices_prefill_rows_through_kv_b_as_step_report_does():
    """DeepSeek-V3 at TP 8: a prefill's rows go through kv_b's GEMM, decodes through the absorbed W_UK / W_UV matmuls
    (step.gemms._mla_projections). The tokens part prices every row as a decode; the prefill part adds the
    difference, so a prefill-only step at grid points is step_report's exactly, a mixed one within OFF_GRID (the
    table had priced 2,048 prefill tokens' projections 6% high)."""
    v3, dep = load_model("deepseek-v3"), Deployment(tensor_parallel=8)
    mla = StepTable.build(v3, H200, dep, max_decodes=32, max_context=4096, max_prefill=2048)
    for p in sorted(set(mla.prefill_grid) & set(mla.tokens_grid))[-3:]:
        r = step_report(v3, H200, 1, int(p), "prefill", deployment=dep, check_memory=False)
        assert float(mla.time_s(0, 0, p)[1]) == pytest.approx(r.t_predicted_s, rel=1e-9)
    r = step_report(v3, H200, 32, 3600, deployment=dep, prefill_tokens=2048, check_memory=False)
    assert float(mla.time_s(32, 32 * 3600, 2048)[1]) == pytest.approx(r.t_predicted_s, rel=OFF_GRID)


def _v0_report(d, length, p, dep=Deployment()):
    kw = dict(deployment=dep, engine="vllm", engine_version="0.7.3", check_memory=False)
    if d == 0:
        return step_report(LLAMA, H200, 1, p, "prefill", **kw)
    return step_report(LLAMA, H200, d, length, prefill_tokens=p, **kw)


@pytest.fixture(scope="module")
def v0_table():
    return StepTable.build(LLAMA, H200, Deployment(), max_decodes=400, max_context=16384, max_prefill=2048,
                           sampler="v0_random", lazy=True)


def test_a_v0_table_is_step_report_at_grid_points_graphed_and_eager(v0_table):
    """vLLM V0 replays its graph only for a decode-only step of at most 256 sequences of at most 8,192 tokens
    (rooflab.step.sampler.graph_replayed): at grid points the table is step_report (engine vllm 0.7.3) on both
    sides of each limit, decode-only steps graphed inside them and eager outside, and prefill-only and mixed steps
    eager."""
    t = v0_table
    on_all = sorted(set(t.decodes_grid) & set(t.tokens_grid) & set(t.sequences_grid))
    lengths = [int(x) for x in t.context_grid]
    below = max(x for x in lengths if x + 1 <= 8192)               # the mean sequence: context + the decoded token
    above = min(x for x in lengths if x + 1 > 8192)
    seen = set()
    for d in (on_all[0], on_all[3], max(d for d in on_all if d <= 256)):
        for length in (lengths[0], below, above):
            floor, pred = t.time_s(d, d * length, 0)
            r = _v0_report(int(d), length, 0)
            seen.add(r.cuda_graph)
            assert float(floor) == pytest.approx(r.t_floor_s, rel=1e-9), (d, length)
            assert float(pred) == pytest.approx(r.t_predicted_s, rel=1e-9), (d, length, r.cuda_graph)
            assert bool(t.replayed(d, d * length, 0)) is r.cuda_graph
    assert seen == {True, False}
    for p in sorted(set(t.prefill_grid) & set(t.tokens_grid))[::6]:
        floor, pred = t.time_s(0, 0, p)
        assert float(pred) == pytest.approx(_v0_report(0, 0, int(p)).t_predicted_s, rel=1e-9), p
    mixed = [(int(d), int(p)) for d in on_all[:6] for p in t.prefill_grid
             if d + p in set(t.tokens_grid) and d + 1 in set(t.sequences_grid)][:3]
    assert mixed
    for d, p in mixed:
        floor, pred = t.time_s(d, d * below, p)
        r = _v0_report(d, below, p)
        assert r.cuda_graph is False and float(pred) == pytest.approx(r.t_predicted_s, rel=1e-9), (d, p)


def test_a_v0_table_past_256_sequences_is_the_eager_deployments_table(v0_table):
    """No decode grid point past 256 sequences lies on the tokens and sequences grids too, so there the V0 table is
    checked against the same table without CUDA graphs (step_report's figures at its grid points: the tests above;
    V0's eager step is the eager deployment's: tests/step/test_report.py), to the bit, and against step_report
    within OFF_GRID; inside the graph it is not the eager table."""
    eager = StepTable.build(LLAMA, H200, Deployment(cuda_graphs=False), max_decodes=400, max_context=16384,
                            max_prefill=2048, sampler="v0_random", lazy=True)
    d = np.array([257.0, 268, 300, 400, 8, 8])
    c = d * np.array([512.0, 2048, 100, 8000, 9000, 512])
    p = np.array([0.0, 0, 0, 0, 0, 100])
    for got, want in zip(v0_table.time_s(d, c, p), eager.time_s(d, c, p)):
        assert got.tolist() == want.tolist()
    assert v0_table.time_s(8, 8 * 512, 0)[1] < eager.time_s(8, 8 * 512, 0)[1]
    for k in range(4):
        r = _v0_report(int(d[k]), int(c[k] / d[k]), 0)
        assert r.cuda_graph is False
        assert float(v0_table.time_s(d[k], c[k], 0)[1]) == pytest.approx(r.t_predicted_s, rel=OFF_GRID)


def test_a_v0_table_off_the_grid_and_lazy(v0_table):
    """Off the grid a V0 step is within OFF_GRID of step_report on either side of the limits, and a lazy table's
    figures are the complete table's (both part sets priced where read)."""
    for d, length, p in ((37, 3000, 0), (300, 2000, 0), (13, 9000, 0), (20, 2500, 333), (0, 0, 1500)):
        floor, pred = v0_table.time_s(d, d * length, p)
        r = _v0_report(d, length, p)
        assert float(pred) == pytest.approx(r.t_predicted_s, rel=OFF_GRID), (d, length, p)
    full = StepTable.build(LLAMA, H200, Deployment(), max_decodes=400, max_context=16384, max_prefill=2048,
                           sampler="v0_random")
    rng = np.random.default_rng(7)
    d = rng.integers(0, 401, 300).astype(float)
    c = d * rng.uniform(16, 16384, 300)
    p = np.where(d == 0, rng.integers(1, 2049, 300), rng.integers(0, 2, 300) * rng.integers(0, 1600, 300))
    for got, want in zip(v0_table.time_s(d, c, p.astype(float)), full.time_s(d, c, p.astype(float))):
        assert got.tolist() == want.tolist()


def test_only_an_engine_that_leaves_its_graph_tabulates_eager_parts():
    """The eager parts exist only for V0 with CUDA graphs (rooflab.step.sampler.leaves_graph); other tables price
    one set, as before. Without CUDA graphs V0's one set is every step's."""
    for sampler, dep, leaves in (("v0_random", Deployment(), True), ("v0_random", Deployment(cuda_graphs=False), False),
                                 ("v1_random", Deployment(), False), ("graphed_greedy", Deployment(), False)):
        t = StepTable.build(LLAMA, H200, dep, max_decodes=8, max_context=1024, max_prefill=64, sampler=sampler,
                            lazy=True)
        assert t.leaves_graph is leaves and (t.eager_decode_parts is not None) is leaves, (sampler, dep)
    eager = StepTable.build(LLAMA, H200, Deployment(cuda_graphs=False), max_decodes=8, max_context=1024,
                            max_prefill=64, sampler="v0_random")
    assert float(eager.time_s(300 // 100, 3 * 512, 0)[1]) == pytest.approx(
        _v0_report(3, 512, 0, Deployment(cuda_graphs=False)).t_predicted_s, rel=1e-9)
