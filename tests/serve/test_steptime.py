"""The serving step time is rooflab's step (StepTable over step_report): equal at the table's grid points, the
closed form's mixed step against step_report's at the same deployment and batch, and the simulation's fast paths
(one, run) against the table's own time_s."""

import numpy as np
import pytest

from rooflab import load_gpu, load_model
from rooflab.deployment import Deployment
from rooflab.serve import Lengths, Replica, Scheduler, TableStepTimes, Workload, step_times
from rooflab.serve.steady import _mix, solve
from rooflab.step import step_report

#: StepTable's off-grid tolerance (tests/test_step_table.py: interpolating between geometric grid points 1.25x
#: apart for tokens and 1.5x for the decode grid), plus rounding the closed form's mean decodes to a whole batch.
OFF_GRID = 0.03


def _report(replica, d, length, p):
    """step_report with the replica's engine and version (its kernels: the sampler after the graph, ...)."""
    engine = dict(engine=replica.scheduler.engine, engine_version=replica.scheduler.version)
    if d == 0:
        return step_report(replica.model, replica.gpu, 1, p, "prefill", deployment=replica.deployment,
                           check_memory=False, **engine)
    return step_report(replica.model, replica.gpu, d, length, deployment=replica.deployment, prefill_tokens=p,
                       check_memory=False, **engine)


def test_the_replica_prices_steps_with_the_step_table(replica):
    assert isinstance(replica.steps, TableStepTimes)
    assert replica.steps.has_prediction and "h200-sxm" in replica.steps.provenance


def test_grid_points_are_step_report(replica):
    table = replica.steps.table
    decodes = sorted(set(table.decodes_grid) & set(table.tokens_grid) & set(table.sequences_grid))
    for d in decodes[1:3] + decodes[-1:]:
        for length in table.context_grid[:: max(1, len(table.context_grid) // 2)]:
            report = _report(replica, int(d), int(length), 0)
            assert replica.steps.floor_s(d, d * length, 0)[0] == pytest.approx(report.t_floor_s, rel=1e-9)
            assert replica.steps.predicted_s(d, d * length, 0)[0] == pytest.approx(report.t_predicted_s, rel=1e-9)


def test_the_closed_forms_step_at_a_steady_mix_is_step_reports(replica):
    """The closed form's mean step tau is E_n[t(D, D L, prefill tokens of n arrivals)] with t the replica's step
    function; with t = step_report itself at the same (whole) batch, the same mix within the table's tolerance."""
    steady = solve(replica, 64, "predicted")
    w, s = replica.workload, replica.scheduler
    decodes_per_request = w.output.mean - 1
    prompt, context = s.prefill_tokens(w.input.mean), replica.mean_context_tokens
    tau = _mix(replica.steps.predicted_s, s, steady.decodes_per_step, context, prompt, decodes_per_request)[0]
    assert steady.step_s == pytest.approx(tau, rel=1e-9)

    def reported(d, c, p):
        return np.array([_report(replica, int(round(di)), int(round(ci / di)) if di else 0, int(pi)).t_predicted_s
                         for di, ci, pi in zip(d, c, p)])

    batch = round(steady.decodes_per_step)
    ours = _mix(replica.steps.predicted_s, s, batch, context, prompt, decodes_per_request)[0]
    theirs = _mix(reported, s, batch, context, prompt, decodes_per_request)[0]
    assert ours == pytest.approx(theirs, rel=OFF_GRID)


@pytest.mark.parametrize("estimate", ["floor", "predicted"])
def test_fast_paths_are_the_tables_numbers(replica, estimate):
    steps = replica.steps
    vector = steps.floor_s if estimate == "floor" else steps.predicted_s
    one, run = steps.one(estimate), steps.run(estimate)
    rng = np.random.default_rng(3)
    top = int(steps.table.decodes_grid[-1])
    for _ in range(200):
        d = int(rng.integers(0, min(top, 200) + 1))
        c = float(d * rng.uniform(replica.workload.input.low, replica.workload.max_len))
        p = float(rng.integers(0 if d else 1, replica.scheduler.max_num_batched_tokens - d + 1))
        assert one(d, c, p) == pytest.approx(float(vector(d, c, p)[0]), rel=1e-12, abs=1e-15)
    d, c0 = 48.0, 48.0 * replica.workload.input.low
    for steps in (1, 7, 500):                                  # a short run is priced step by step
        times = run(d, c0, steps)
        expected = vector(np.full(steps, d), c0 + d * np.arange(steps), np.zeros(steps))
        assert np.allclose(times, expected, rtol=1e-12)


def test_a_fractional_decode_is_one_decode_and_nothing_takes_no_time(replica):
    steps = replica.steps
    assert steps.floor_s(0.5, 0.5 * 1500, 0)[0] == steps.floor_s(1, 1500, 0)[0]
    assert steps.floor_s(0, 0, 0)[0] == 0.0


def test_data_parallel_replicas_are_refused_and_attention_ranks_served(replica):
    """vLLM's --data-parallel-size replicas are refused, naming the option; SGLang's data-parallel attention ranks
    are served (one rank's step table, rooflab.serve.steady)."""
    from rooflab import load_model
    from rooflab.deployment import Deployment
    from rooflab.errors import InputError
    from rooflab.serve import Replica, Scheduler

    with pytest.raises(InputError, match="data-parallel-size"):
        Replica.build(load_model("llama-3-8b"), replica.gpu, Deployment(data_parallel=2), replica.workload)
    served = Replica.build(load_model("deepseek-v3"), replica.gpu, Deployment(
        tensor_parallel=8, attention_data_parallel=8, expert_parallel=8), replica.workload,
        Scheduler.sglang(replica.gpu.hbm_capacity_bytes), max_concurrency=16)
    assert served.ranks == 8 and served.steps.table.decodes_grid[-1] >= served.rank_running_limit


def test_a_replica_prices_the_experts_as_its_engine_and_version_run_them():
    """Mixtral-8x7B TP 2 on the H200: SGLang 0.4.3.post2 shipped a tuned fused_moe config for the shape
    (rooflab.step.moe_kernel's facts), so its replica's table prices the experts `tuned`; vLLM 0.7.3 shipped none
    (`default_config`); the scheduler's own default version ('v1 (0.11+)') names no release: the default."""
    model, gpu, dep = load_model("mixtral-8x7b"), load_gpu("h200-sxm"), Deployment(tensor_parallel=2)
    workload = Workload(Lengths(100, 200), Lengths(10, 20))
    memory = gpu.cuda_visible_bytes
    kernels = {}
    for engine, version in (("sglang", "0.4.3.post2"), ("vllm", "0.7.3"), ("vllm", "")):
        scheduler = Scheduler.default(engine, memory)
        scheduler = scheduler.replace(version=version) if version else scheduler
        built = Replica.build(model, gpu, dep, workload, scheduler, max_concurrency=8)
        kernels[engine, version] = built.steps.table.moe_kernel
    assert kernels == {("sglang", "0.4.3.post2"): "tuned", ("vllm", "0.7.3"): "default_config",
                       ("vllm", ""): "torch_grouped"}


def _step_times(**sizes):
    args = {**dict(max_decodes=16, min_context=128, max_context=4096, max_prefill=2048), **sizes}
    return step_times(load_model("llama-3-8b"), load_gpu("h100-sxm"), Deployment(), **args)


@pytest.mark.parametrize("name", ["max_decodes", "min_context", "max_context", "max_prefill"])
@pytest.mark.parametrize("value", [None, "4", b"4", 2.5, 0, -3, float("nan"), float("inf"), 2 ** 70])
def test_step_times_sizes_are_whole_numbers_named(name, value):
    """step_times int()ed its sizes: None a TypeError, nan a ValueError, inf an OverflowError, b'4' read as 4, 2.5
    as 2, 0 and -3 raised to 1 in silence."""
    from support import refused

    refused(lambda: _step_times(**{name: value}), name)


def test_step_times_refuses_a_min_context_above_max_context():
    """min_context 2**70 was refused as 'max_context ... got 1180591620717411303425', a value never given (it raised
    max_context to min_context + 1)."""
    from support import refused

    refused(lambda: _step_times(min_context=8192), "min_context (8,192)", "max_context (4,096)")


def test_the_provenance_names_every_kernel_the_engine_picked():
    """A DeepSeek-V3 replica under vLLM 0.7.3 prices routing compiled, MLA's projections absorbed into q and o and
    its decode at 4 splits: the serving figures' provenance says each (the session-14 review: it named the experts'
    kernel alone)."""
    from rooflab.deployment import Deployment
    from rooflab.load import load_gpu, load_model
    from rooflab.serve.steptime import step_times
    from rooflab.step import engine_kernels

    v3, h200, dep = load_model("deepseek-v3"), load_gpu("h200-sxm"), Deployment(tensor_parallel=8)
    k = engine_kernels(v3, h200, dep, "vllm", "0.7.3")
    steps = step_times(v3, h200, dep, 8, 16, 2048, 256, moe_kernel=k.moe_kernel, decode_attention=k.decode_attention,
                       routing=k.routing, mla_decode_splits=k.mla_decode_splits, mla_layout=k.mla_layout,
                       absorbed_bytes=k.absorbed_bytes)
    assert "routing grouped_topk_compiled" in steps.provenance
    assert "MLA projections absorbed_into_q_o" in steps.provenance and "MLA decode splits 4" in steps.provenance


@pytest.mark.parametrize("estimate", ["floor", "predicted"])
def test_a_v0_tables_fast_paths_switch_timing_where_the_table_does(estimate):
    """vLLM V0 (sampler v0_random) with CUDA graphs: the table holds graph and eager parts (StepTable.replayed picks
    per step: eager past 256 sequences, past 8,192 tokens, with any prefill). `one` and `run` give time_s's
    numbers on both sides, and a run whose sequences grow past 8,192 tokens switches to the eager parts mid-run
    (each stretch priced from its set); at a grid point both are step_report's (vllm 0.7.3)."""
    model, gpu = load_model("llama-3.2-1b"), load_gpu("h200-sxm")
    steps = step_times(model, gpu, Deployment(), 400, 16, 16384, 1024, sampler="v0_random")
    assert steps.table.leaves_graph
    vector = steps.floor_s if estimate == "floor" else steps.predicted_s
    one, run = steps.one(estimate), steps.run(estimate)
    rng = np.random.default_rng(11)
    for _ in range(300):
        d = int(rng.integers(0, 401))
        c = float(d * rng.uniform(16, 16384))
        p = float(rng.integers(0 if d else 1, 2) * rng.integers(1, 1024 - 400))
        assert one(d, c, p) == pytest.approx(float(vector(d, c, p)[0]), rel=1e-12, abs=1e-15), (d, c, p)
    for d, c0, n in ((8.0, 8.0 * 8100, 200), (8.0, 8.0 * 8180, 30), (300.0, 300.0 * 100, 100), (64.0, 64.0, 5)):
        times = run(d, c0, n)
        expected = vector(np.full(n, d), c0 + d * np.arange(n), np.zeros(n))
        assert np.allclose(times, expected, rtol=1e-12), (d, c0, n)
    graphed = steps.table.replayed(8.0, 8.0 * (8100 + np.arange(200)), 0.0)
    assert graphed.any() and not graphed.all()                 # the first run crosses 8,192 tokens
    report = step_report(model, gpu, 7, 11148, engine="vllm", engine_version="0.7.3", check_memory=False)
    assert report.cuda_graph is False and 11148 in steps.table.context_grid
    if estimate == "predicted":
        assert one(7, 7 * 11148, 0) == pytest.approx(report.t_predicted_s, rel=1e-9)
