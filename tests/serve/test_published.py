"""Tests of rooflab/serve/published.py: a published serving row's replica runs the row's engine at the row's
version, which picks the experts' kernel (rooflab.step.engine_moe_kernel)."""

from rooflab.load import load_model
from rooflab.published import load_published
from rooflab.serve.published import _deployment, _replica
from rooflab.units import DType


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


def test_an_fp8_row_keeps_a_checkpoints_own_fp8():
    """DeepSeek-R1-0528 ships block fp8 ([128, 128] weight blocks), which SGLang serves block-scaled (its 0.5.12
    wheel: the per-token-group activation quantisation and DeepGEMM, rooflab.step.dense_block_fp8): the InferenceX
    rows' fp8 keeps the checkpoint's format, so the step prices the block-fp8 launches; a 16-bit checkpoint's fp8
    row (Llama-3.3-70B) is still quantised to per-tensor fp8."""
    row = next(r for r in load_published().serving if r.source == "inferencex-dsr1-fp8-h200-sglang")
    dep = _deployment(row, load_model("deepseek-v3"))
    assert row.weight_format == "fp8" and dep.weight_format is None and dep.gemm_dtype is None
    replica = _replica("deepseek-v3", row.gpu, row.tp, row.weight_format, row.kv_cache_dtype, row.engine,
                       (819, 1024, 819, 1024), row.engine_version)
    assert replica.deployment.weight_format is None
    llama = _deployment(row, load_model("llama-3-70b"))
    assert llama.weight_format is DType.fp8_e4m3 and llama.gemm_dtype is DType.fp8_e4m3


def test_a_16_bit_row_of_a_checkpoint_shipped_otherwise_is_priced_16_bit():
    """A bf16 row of DeepSeek-V3 (shipped block fp8) is priced bf16, weights and GEMMs; a bf16 row of a 16-bit
    checkpoint keeps it as shipped; an fp8 row of gpt-oss-120b (mxfp4 experts) is refused naming the field, not
    priced as per-tensor fp8 experts the row does not say it ran."""
    import pytest
    from types import SimpleNamespace

    from rooflab.errors import RooflabError

    row = SimpleNamespace(weight_format="bf16", enforce_eager=False, ep=1, dp=1, pp=1, dp_attention=False,
                          kv_cache_dtype="bf16", tp=8, model="gpt-oss-120b")
    dep = _deployment(row, load_model("deepseek-v3"))
    assert dep.weight_format is DType.bf16 and dep.gemm_dtype is DType.bf16
    assert _deployment(row, load_model("llama-3-70b")).weight_format is None
    row.weight_format = "fp8"
    with pytest.raises(RooflabError, match="weight_format fp8: the checkpoint ships .*mxfp4"):
        _deployment(row, load_model("gpt-oss-120b"))
