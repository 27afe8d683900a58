"""Tests of rooflab/step/work.py: StepWork's counts by hand, and step_graphed, the rule (rooflab.step.sampler.
graph_replayed) applied to a step's work: its decode rows, prefill tokens and longest sequence (context + query
tokens)."""

from __future__ import annotations

import pytest

from rooflab.deployment import Deployment
from rooflab.step import StepWork
from rooflab.step.sampler import Sampler
from rooflab.step.work import step_graphed


def test_the_works_counts_by_hand():
    work = StepWork(decodes=8, q_len=4, context_len=1000, prefills=1, prefill_len=300)
    assert (work.prefill_tokens, work.tokens, work.logit_rows) == (300, 8 * 4 + 300, 8 * 4 + 1)


@pytest.mark.parametrize("work, graphed", [
    (StepWork(decodes=256, context_len=8191), True),           # 256 sequences of 8,192 tokens: the largest graph
    (StepWork(decodes=257, context_len=512), False),           # past the largest captured batch
    (StepWork(decodes=8, context_len=8192), False),            # a sequence of 8,193 tokens
    (StepWork(decodes=8, context_len=512, prefills=1, prefill_len=256), False),   # a mixed step
    (StepWork(prefills=2, prefill_len=512), False),            # a prefill
    (StepWork(decodes=64, q_len=4, context_len=8188), True),   # 256 rows, 8,192 tokens with the 4 query tokens
    (StepWork(decodes=64, q_len=4, context_len=8189), False),
    (StepWork(decodes=65, q_len=4, context_len=512), False),   # 260 rows
])
def test_step_graphed_under_v0(work, graphed):
    """V0 (v0_random) with CUDA graphs: graphed only inside its captured decode batches (graph_replayed's
    citation: vllm 0.7.3 worker/model_runner.py _use_captured_graph)."""
    assert step_graphed(Sampler.v0_random, Deployment(), work) is graphed
    assert step_graphed(Sampler.v0_random, Deployment(cuda_graphs=False), work) is False


@pytest.mark.parametrize("sampler", [Sampler.v1_random, Sampler.greedy_argmax, Sampler.graphed_greedy])
def test_step_graphed_elsewhere_is_the_deployments(sampler):
    for work in (StepWork(decodes=1024, context_len=100_000), StepWork(prefills=4, prefill_len=4096)):
        assert step_graphed(sampler, Deployment(), work) is True
        assert step_graphed(sampler, Deployment(cuda_graphs=False), work) is False
