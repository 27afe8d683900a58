"""The closed form against the simulation (issue 30's agreement test) and its invariants."""

import pytest

from rooflab.serve import ClosedLoop, simulate, steady_state
from rooflab.serve.steady import solve

#: The issue's tolerance: closed form and simulation within 3% on throughput and mean TPOT.
AGREEMENT = 0.03


@pytest.mark.parametrize("concurrency", [4, 64])
def test_closed_form_agrees_with_the_simulation(replica, concurrency):
    for estimate in ("floor", "predicted"):
        closed = solve(replica, concurrency, estimate)
        sim = simulate(replica, ClosedLoop(concurrency), num_requests=40 * concurrency, estimate=estimate)
        assert sim.output_tokens_per_s == pytest.approx(closed.output_tokens_per_s, rel=AGREEMENT)
        assert sim.tpot.mean_s == pytest.approx(closed.tpot_s, rel=AGREEMENT)


def test_floor_is_below_the_prediction_and_grows_with_concurrency(replica):
    low, high = steady_state(replica, 1), steady_state(replica, 128)
    for state in (low, high):
        assert state.floor.tpot_s <= state.predicted.tpot_s
        assert state.floor.output_tokens_per_s >= state.predicted.output_tokens_per_s
    assert high.floor.tpot_s > low.floor.tpot_s
    assert high.predicted.output_tokens_per_s > low.predicted.output_tokens_per_s


def test_past_the_kv_limit_requests_queue(replica):
    beyond = solve(replica, replica.running_limit * 2, "floor")
    assert beyond.running == replica.running_limit
    assert beyond.queue_s > 0
    assert beyond.ttft_s > solve(replica, replica.running_limit, "floor").ttft_s


def test_to_frame_has_both_estimates(replica):
    frame = steady_state(replica, 8).to_frame()
    assert list(frame.estimate) == ["floor", "predicted"]


@pytest.fixture(scope="module")
def drafted():
    """Llama-3-8B on one H200 with an EAGLE head, k 3 at acceptance 0.7; fixed lengths 512 in / 129 out."""
    from rooflab import load_gpu, load_model
    from rooflab.deployment import Deployment, Speculative
    from rooflab.serve import Replica, Workload

    dep = Deployment(speculative=Speculative("eagle", 3, 0.7))
    return Replica.build(load_model("llama-3-8b"), load_gpu("h200-sxm"), dep, Workload.fixed(512, 129),
                         max_concurrency=16)


@pytest.mark.parametrize("concurrency", [1, 16])
def test_speculative_decoding_emits_the_drafts_expected_tokens_a_step(drafted, concurrency):
    """The closed form under speculative decoding (rooflab.serve.steady's docstring): E = (1 - a^(k+1)) / (1 - a) =
    (1 - 0.7^4) / 0.3 = 2.533 tokens a decode step, so the 128 decode tokens of a request take 128 / E steps of
    τ, TPOT = τ / E, tok/s/user = E / τ, and the step table scores k + 1 = 4 tokens a sequence."""
    e = (1 - 0.7 ** 4) / 0.3
    assert drafted.steps.table.q_len == 4
    for estimate in ("floor", "predicted"):
        s = solve(drafted, concurrency, estimate)
        assert s.tpot_s == pytest.approx(s.step_s / e, rel=1e-12)
        assert s.itl_s == s.step_s
        assert s.output_tokens_per_s_per_user == pytest.approx(e / s.step_s, rel=1e-12)
        assert s.e2e_s == pytest.approx(s.ttft_s + 128 / e * s.step_s, rel=1e-12)
        assert s.output_tokens_per_s == pytest.approx(concurrency / s.e2e_s * 129, rel=1e-12)


def test_the_simulation_refuses_speculative_decoding(drafted):
    from rooflab.errors import InputError

    with pytest.raises(InputError, match="closed form"):
        simulate(drafted, ClosedLoop(4), num_requests=8)


def test_a_draft_model_shares_the_replicas_kv_pages():
    """A draft model's weights leave the KV budget and each token's KV is shared with the draft's
    (rooflab.step.memory.draft_memory, the step's count): Llama-3-70B fp8 on one H200 with Llama-3-8B drafting,
    4,096-token requests: tokens = plain x (budget - draft weights) / budget x target / (target + draft) per
    sequence, by hand from the plan's figures."""
    from rooflab import load_gpu, load_model
    from rooflab.capacity import plan_capacity
    from rooflab.deployment import Deployment, Speculative
    from rooflab.serve import Replica, Workload
    from rooflab.step.memory import draft_memory
    from rooflab.units import DType, WeightFormat

    model, gpu = load_model("llama-3-70b"), load_gpu("h200-sxm")
    plain = Deployment(weight_format=WeightFormat.fp8, dtype=DType.bf16, kv_cache_dtype=DType.bf16)
    drafted = plain.replace(speculative=Speculative("draft_model", 4, 0.7, "llama-3-8b"))
    work = Workload.fixed(3072, 1024)
    a = Replica.build(model, gpu, plain, work, max_concurrency=4)
    b = Replica.build(model, gpu, drafted, work, max_concurrency=4)
    plan = plan_capacity(model, gpu, 4096, max_model_len=4096, deployment=plain)
    _, weights, draft = draft_memory(drafted, DType.bf16, 4096)
    target = float(plan.kv_bytes_per_sequence)
    assert weights > 15e9 and draft > 0
    expected = int(a.kv_tokens * (plan.kv_budget_bytes - weights) / plan.kv_budget_bytes * target / (target + draft))
    assert b.kv_tokens == expected < a.kv_tokens


def test_data_parallel_attention_deals_requests_over_the_ranks():
    """SGLang's --enable-dp-attention --dp 8 on 8 H200s (DeepSeek-V3, EP 8): each attention rank holds its own KV
    pool and scheduler (SGLang splits --chunked-prefill-size 8,192 into 1,024 a rank: sglang 0.5.12 srt/
    server_args.py:3070) and the ranks step together, so the steady state at concurrency c is one rank's at
    ceil(c / 8) requests (rooflab.serve.steady's docstring): the same step time, TPOT and E2E, and 8 x its
    requests/s when c divides evenly."""
    from rooflab import load_gpu, load_model
    from rooflab.deployment import Deployment
    from rooflab.serve import Replica, Scheduler, Workload
    from rooflab.serve.replica import rank_scheduler
    from rooflab.units import GiB

    model, gpu = load_model("deepseek-v3"), load_gpu("h200-sxm")
    dep = Deployment(tensor_parallel=8, attention_data_parallel=8, expert_parallel=8)
    sched = Scheduler.sglang(141 * GiB)
    rep = Replica.build(model, gpu, dep, Workload.fixed(1024, 256), sched, max_concurrency=64)
    assert rep.ranks == 8 and rep.scheduler.max_num_batched_tokens == 1024
    assert rank_scheduler(sched.replace(max_num_seqs=100), 8).max_num_seqs == 12
    assert rep.kv_limit == 8 * rep.rank_kv_limit and rep.running_limit == 8 * rep.rank_running_limit
    for c in (8, 64):
        s = solve(rep, c, "floor")
        assert s.running == c
        assert s.e2e_s == pytest.approx(s.ttft_s + 255 * s.step_s, rel=1e-12)
        assert s.requests_per_s == pytest.approx(c / s.e2e_s, rel=1e-12)
        assert s.decodes_per_step <= c / 8                   # a rank's decodes, not the replica's
    uneven, even = solve(rep, 9, "floor"), solve(rep, 16, "floor")
    assert uneven.decodes_per_step == pytest.approx(even.decodes_per_step, rel=1e-2)   # the busiest holds 2 either way
    assert uneven.step_s <= even.step_s                  # but fewer ranks with requests bring fewer prefills


def test_one_ranks_prefill_stalls_every_rank(replica):
    """SGLang's DP ranks step together and a step is a prefill step when any rank prefills (sglang 0.5.12
    srt/managers/scheduler_dp_attn_mixin.py:112-113): with prefills and decodes apart and few arrivals a step (m
    small), the prefill time a decode step sees is about P(n >= 1) t_pre(P) with n ~ Poisson(N m): N m t_pre over N
    ranks against m t_pre on one."""
    from rooflab.serve import Scheduler
    from rooflab.serve.steady import _mix
    from rooflab.units import GiB

    t, sched = replica.steps.predicted_s, Scheduler.sglang(141 * GiB)
    d, context, prompt, decodes = 8.0, 2048.0, 1024.0, 8000.0       # m = 1e-3 arrivals a rank a step
    t_dec = float(t([d], [d * context], [0.0])[0])
    one = _mix(t, sched, d, context, prompt, decodes)[0] - t_dec
    eight = _mix(t, sched, d, context, prompt, decodes, ranks=8)[0] - t_dec
    assert one > 0 and eight / one == pytest.approx(8, rel=0.01)
    assert _mix(t, sched, d, context, prompt, decodes, ranks=1) == _mix(t, sched, d, context, prompt, decodes)
