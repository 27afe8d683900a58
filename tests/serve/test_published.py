"""Tests of rooflab/serve/published.py: a published serving row's replica runs the row's engine at the row's
version, which picks the experts' kernel (rooflab.step.engine_moe_kernel)."""

from rooflab.published import load_published
from rooflab.serve.published import _replica


def test_a_rows_replica_carries_its_engine_version_and_the_kernel_it_picks():
    """The InferenceX SGLang 0.5.12 DeepSeek-R1 TP 8 rows on the H200: SGLang 0.5.12 shipped a tuned fused_moe
    config for E=256, N=256, block fp8 on the H200 (rooflab.step.moe_kernel.CONFIG_FACTS), so the replica's step
    table prices the experts `tuned`; the same row without its version keeps the scheduler's default version
    ('0.5', SGLang's defaults), from which the same fact picks `tuned` too; vLLM's default ('v1 (0.11+)') names
    no release and keeps the step's default."""
    row = next(r for r in load_published().serving if r.source == "inferencex-dsr1-fp8-h200-sglang")
    assert (row.engine, row.engine_version, row.tp) == ("sglang", "0.5.12", 8)
    ranges = (819, 1024, 819, 1024)
    replica = _replica("deepseek-v3", row.gpu, row.tp, row.weight_format, row.kv_cache_dtype, row.engine, ranges,
                       row.engine_version)
    assert replica.scheduler.version == "0.5.12" and replica.steps.table.moe_kernel == "tuned"
    plain = _replica("deepseek-v3", row.gpu, row.tp, row.weight_format, row.kv_cache_dtype, row.engine, ranges)
    assert plain.scheduler.version == "0.5" and plain.steps.table.moe_kernel == "tuned"
    vllm = _replica("deepseek-v3", row.gpu, row.tp, row.weight_format, row.kv_cache_dtype, "vllm", ranges)
    assert vllm.steps.table.moe_kernel == "torch_grouped"
