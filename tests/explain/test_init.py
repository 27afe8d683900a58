"""Tests of rooflab/explain/__init__.py: explain's derivations agree with the cost functions.

Every variant that applies to a layer type derives without ExplainMismatch (each shown formula agrees with the
cost function to AGREEMENT_RTOL) on every bundled model and on architectures written here as YAML, on random
shapes, below and above a window, ragged batches and q_len 1 and 4; visible pairs of windows and chunks by
hand; MLA (intensity, 64-row work units, the 656-byte sparse fp8 latent, un-absorbed prefill) and linear
layers' state; explain and the report price the same layer, per GPU of a TP group, and a bare shape.
Sources: the chapters; NVIDIA's Blackwell datasheet, HGX B200 column (2.25 PFLOP/s dense fp16); 16 exps per
clock per SM (CUDA C++ Programming Guide, throughput table) at 148 SMs x 1.965 GHz; FlashAttention-4 (the exp
units tie the tensor cores at d 128 on B200).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rooflab import DType, ModelSpec, load_gpu, load_model
from rooflab.errors import InputError
from rooflab.explain import EXPLAINED, explain, render_explanation
from rooflab.load import available, parse_yaml, spec_from_mapping
from rooflab.report import decode_report, prefill_report
from rooflab.specs import LayerType
from rooflab.vocab import LayerKind, Variant
from support import _COMMON, DEEPSEEK, GEMMA3


H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


# gpt-oss model card: banded (128-token window) and dense layers alternate, both with sinks; 64/8 heads of 64
GPT_OSS = """
name: gpt-oss-like
display_name: gpt-oss-like
num_layers: 24
hidden_size: 2880
num_qo_heads: 64
num_kv_heads: 8
head_dim: 64
source: gpt-oss model card (alternating window-128 and full attention, sinks)
layer_types:
  sliding: {kind: sliding, window: 128, sinks: true}
  full: {kind: full, sinks: true}
layer_pattern: [sliding, full]
""" + _COMMON


# Llama 4 model card: three chunked-attention layers (chunk 8192) per global one; Scout: 48 layers, 40/8 heads
LLAMA4 = """
name: llama4-like
display_name: Llama-4-like chunked 3:1
num_layers: 48
hidden_size: 5120
num_qo_heads: 40
num_kv_heads: 8
head_dim: 128
source: Llama 4 model card (chunked local attention, 3:1)
layer_types:
  chunked: {kind: chunked, chunk: 8192}
  global: {kind: full}
layer_pattern: [chunked, chunked, chunked, global]
""" + _COMMON

# Qwen3-Next model card and config: Gated DeltaNet on three of every four layers
QWEN3_NEXT = """
name: qwen3-next-like
display_name: Qwen3-Next-like
num_layers: 48
hidden_size: 2048
num_qo_heads: 16
num_kv_heads: 2
head_dim: 256
source: Qwen3-Next config (linear attention 3:1)
layer_types:
  linear: {kind: linear, linear_num_key_heads: 16, linear_num_value_heads: 32, linear_key_head_dim: 128,
           linear_value_head_dim: 128, linear_conv_kernel: 4}
  full: {kind: full}
layer_pattern: [linear, linear, linear, full]
""" + _COMMON


def _model(text: str) -> ModelSpec:
    return spec_from_mapping(ModelSpec, parse_yaml(text, "test"), "test")


WRITTEN = {"gemma3": _model(GEMMA3), "gpt-oss": _model(GPT_OSS), "deepseek": _model(DEEPSEEK.format(heads=128)),
           "llama4": _model(LLAMA4), "qwen3-next": _model(QWEN3_NEXT)}
DEEPSEEK_TP8 = _model(DEEPSEEK.format(heads=16))          # the 16 heads one GPU of TP 8 computes


def _steps(e):
    return {s.quantity: s for section in e.sections for s in section.steps}


def _symbols(e):
    return {s: v for s, v, _ in e.symbols}


def _variants(layer: LayerType) -> tuple[Variant, ...]:
    if layer.kind is LayerKind.linear:
        return (Variant.recurrent,)
    return tuple(v for v in EXPLAINED if v is not Variant.recurrent)


def _all_models():
    out = [pytest.param(load_model(n), id=n) for n in available("models")]
    return out + [pytest.param(m, id=f"yaml-{k}") for k, m in WRITTEN.items()]


# T below and above every window and chunk here (128, 1024, 4096, 8192); a uniform and a ragged batch
PREFILLS = [(100, 1, True), (5000, 2, False), (20000, 1, True)]
DECODES = [([8192] * 4, 1), ([5, 700, 20000], 1), ([8192] * 4, 4), ([5, 700, 20000], 4)]


@pytest.mark.parametrize("model", _all_models())
def test_every_variant_derives_on_every_layer_type(model):
    """explain raises ExplainMismatch if any formula disagrees with the cost function."""
    for name, layer in model.layer_types.items():
        if name not in model.layer_counts:
            continue
        for variant in _variants(layer):
            if variant in (Variant.naive, Variant.flash, Variant.merge):
                runs = [dict(seq_len=t, batch=b, causal=c) for t, b, c in PREFILLS]
            else:
                runs = [dict(context_lens=lens, q_len=q, seq_len=3000, batch=len(lens)) for lens, q in DECODES]
            for run in runs:
                e = explain(variant, model, H200, dtype=DType.bf16, layer_type=name, **run)
                text = render_explanation(e)
                assert text.startswith(f"{variant.value} attention") and e.sections
                assert render_explanation(e, markdown=True).count("| quantity |") == len(e.sections)


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["sliding", "chunked", "full"]), span=st.sampled_from([1, 5, 128, 1000, 8192]),
       sinks=st.booleans(), v_head_dim=st.sampled_from([None, 64]), seq_len=st.integers(1, 30_000),
       lens=st.lists(st.integers(9, 40_000), min_size=1, max_size=4), q_len=st.sampled_from([1, 2, 4, 9]),
       page=st.sampled_from([1, 16, 64]), splits=st.integers(1, 12), variant=st.sampled_from(
           [Variant.naive, Variant.flash, Variant.paged, Variant.split_kv, Variant.merge]))
def test_layer_formulas_agree_on_random_shapes(kind, span, sinks, v_head_dim, seq_len, lens, q_len, page, splits,
                                              variant):
    extra = {"sliding": {"window": span}, "chunked": {"chunk": span}, "full": {}}[kind]
    layer = LayerType(LayerKind(kind), sinks=sinks and kind != "chunked", **extra)
    model = ModelSpec(name="m", display_name="M", num_layers=4, hidden_size=4096, num_qo_heads=32, num_kv_heads=8,
                      head_dim=128, v_head_dim=v_head_dim, ffn_size=8192, vocab_size=1000, max_context_len=8192,
                      source="test", layer_types={"x": layer, "full": LayerType(LayerKind.full)},
                      layer_pattern=("x", "full"))
    decode = variant in (Variant.paged, Variant.split_kv)
    explain(variant, model, H100, seq_len, 2, DType.fp16, False, lens, page,
            splits=splits if variant is Variant.split_kv else None, layer_type="x", q_len=q_len if decode else 1)


# --- windows and chunks -------------------------------------------------------------------------------------

def test_window_pairs_below_and_above_the_window():
    """Visible pairs of a 128-token window (gpt-oss): T (T + 1) / 2 up to W, W (W + 1) / 2 + (T - W) W past it."""
    model = WRITTEN["gpt-oss"]
    below = _steps(explain(Variant.flash, model, H200, 100, layer_type="sliding"))
    assert below["pairs"].formula == "T * (T + 1) / 2" and below["pairs"].value == 100 * 101 / 2
    above = _steps(explain(Variant.flash, model, H200, 5000, layer_type="sliding"))
    assert above["pairs"].formula == "W * (W + 1) / 2 + (T - W) * W"
    assert above["pairs"].value == 128 * 129 / 2 + (5000 - 128) * 128
    assert above["F"].formula == "4 * B * h * pairs * d" and above["F"].value == 4 * 64 * above["pairs"].value * 64
    # sinks: one more exp per (head, query)
    assert above["E"].formula == "B * h * pairs + B * h * T"
    assert above["E"].value == 64 * above["pairs"].value + 64 * 5000
    # the tiled estimate reads at most W + B_r - 1 keys per query tile (cost/flash.py, _kv_rows_per_head)
    e = explain(Variant.flash, model, H200, 5000, layer_type="sliding")
    assert _symbols(e)["cap"] == str(128 + 128 - 1) and "cap" in above["Q_tiled"].formula


def test_chunk_pairs():
    """Chunk C = 8192 (Llama 4): (T // C) C (C + 1) / 2 + r (r + 1) / 2 with r = T mod C."""
    steps = _steps(explain(Variant.naive, WRITTEN["llama4"], H200, 20000, layer_type="chunked"))
    r = 20000 % 8192
    assert steps["pairs"].formula == "floor(T / C) * C * (C + 1) / 2 + r * (r + 1) / 2"
    assert steps["pairs"].value == 2 * 8192 * 8193 / 2 + r * (r + 1) / 2
    assert steps["S"].value == 40 * 20000 ** 2 * 2          # naive materialises the whole T x T, masked


def test_decode_on_a_window_reads_only_the_window():
    steps = _steps(explain(Variant.paged, WRITTEN["gemma3"], H200, context_lens=[8192] * 4, layer_type="local",
                           q_len=4))
    assert steps["read"].formula == "min(max_ctx, W + q - 1)" and steps["read"].value == 1024 + 4 - 1
    assert steps["Q_kv"].value == 2 * 16 * 128 * 2 * 4 * 1027
    assert steps["pairs"].formula == "q * W" and steps["pairs"].value == 4 * 1024


def test_decode_q_len_grows_flops_not_kv_bytes():
    """Full attention, q new tokens: pairs q ctx - q (q - 1) / 2; the KV bytes are those of one token."""
    one = _steps(explain(Variant.paged, WRITTEN["gemma3"], H200, context_lens=[8192] * 4, layer_type="global"))
    four = _steps(explain(Variant.paged, WRITTEN["gemma3"], H200, context_lens=[8192] * 4, layer_type="global",
                          q_len=4))
    assert four["Q_kv"].value == one["Q_kv"].value
    assert four["F"].formula == "4 * h * d * (q * sum_ctx - B * q * (q - 1) / 2)"
    assert four["F"].value / one["F"].value == pytest.approx((4 * 8192 - 6) / 8192)


def test_a_full_layer_of_a_hybrid_model_reads_like_a_plain_model():
    """Gemma-3's global layers derive with the same formulas as a uniform model of the same heads."""
    hybrid = WRITTEN["gemma3"]
    plain = ModelSpec(name="p", display_name="P", num_layers=62, hidden_size=5376, num_qo_heads=32, num_kv_heads=16,
                      head_dim=128, ffn_size=8192, vocab_size=32000, max_context_len=131072, source="test")
    for variant in (Variant.flash, Variant.paged, Variant.split_kv):
        a = explain(variant, hybrid, H200, 8192, layer_type="global", context_lens=[8192])
        b = explain(variant, plain, H200, 8192, context_lens=[8192])
        assert [(s.quantity, s.formula) for s in _steps(a).values()] == \
            [(s.quantity, s.formula) for s in _steps(b).values()]
        assert _steps(a)["t_floor"].value == _steps(b)["t_floor"].value


def test_default_layer_type_is_the_main_softmax_one():
    assert "'local' layers" in explain(Variant.flash, WRITTEN["gemma3"], H200).title
    assert "'chunked' layers" in explain(Variant.paged, WRITTEN["llama4"], H200).title
    assert "'full' layers" in explain(Variant.paged, WRITTEN["qwen3-next"], H200).title
    assert "'linear' layers" in explain(Variant.recurrent, WRITTEN["qwen3-next"], H200).title
    assert "layers" not in explain(Variant.flash, load_model("llama-3-8b"), H100).title.split(":")[0]


# --- MLA ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, gpu, bound, intensity", [
    # DeepSeek-V3 technical report / FlashMLA: 2 (576 + 512) FLOP per (head, key) over 576 x 2 bytes per key
    (WRITTEN["deepseek"], H200, "compute", 2 * 1088 * 128 / 1152),      # 241.8 > ridge 206 (989.4 / 4.8)
    (WRITTEN["deepseek"], H100, "memory", 2 * 1088 * 128 / 1152),       # 241.8 < ridge 295 (989.4 / 3.35)
    (DEEPSEEK_TP8, H200, "memory", 2 * 1088 * 16 / 1152),               # 16 heads (TP 8): 30.2
])
def test_mla_decode_intensity_and_the_roof_that_binds(model, gpu, bound, intensity):
    e = explain(Variant.paged, model, gpu, dtype=DType.bf16)
    steps = _steps(e)
    assert steps["I_kv"].formula == "2 * (d_c + d_R + d_c) * h / ((d_c + d_R) * b_kv)"
    assert steps["I_kv"].value == pytest.approx(intensity, rel=1e-12)
    assert steps["I_kv"].result == f"{intensity:.1f} FLOP/byte"
    assert f"absorbed MLA decode is {bound}-bound on this GPU" in e.conclusion[0]
    assert steps["lat"].value == 1152 and steps["F"].value == 2 * 1088 * model.num_qo_heads * 8192


def test_mla_golden_figures_in_text():
    text = render_explanation(explain(Variant.paged, WRITTEN["deepseek"], H200, dtype=DType.bf16))
    assert "I_kv   = 2 * (d_c + d_R + d_c) * h / ((d_c + d_R) * b_kv) = 2 * (512 + 64 + 512) * 128 / ((512 + 64) * 2)" \
        " = 241.8 FLOP/byte" in text
    assert "compute-bound on this GPU: I = 234.8 > ridge 206.1" in text
    assert "= 30.2 FLOP/byte" in render_explanation(explain(Variant.paged, DEEPSEEK_TP8, H200, dtype=DType.bf16))


def test_mla_work_units_are_64_row_tiles():
    one = _steps(explain(Variant.paged, WRITTEN["deepseek"], H200, dtype=DType.bf16, context_lens=[4096] * 3))
    assert one["units"].formula == "B * tiles" and one["units"].value == 3 * 2        # ceil(1 x 128 / 64)
    four = _steps(explain(Variant.paged, WRITTEN["deepseek"], H200, dtype=DType.bf16, context_lens=[4096] * 3,
                          q_len=4))
    assert four["units"].value == 3 * 8 and four["Q_latent"].value == one["Q_latent"].value


def test_mla_sparse_fp8_latent_is_656_bytes():
    steps = _steps(explain(Variant.split_kv, WRITTEN["deepseek"], H200, dtype=DType.bf16, mla_sparse_fp8=True))
    assert steps["lat"].value == 656 and steps["I_kv"].formula == "F / Q_latent"


def test_mla_prefill_is_un_absorbed():
    e = explain(Variant.flash, WRITTEN["deepseek"], H200, 4096, dtype=DType.bf16, causal=True)
    symbols = _symbols(e)
    assert (symbols["h"], symbols["h_kv"], symbols["d"], symbols["d_v"]) == ("128", "128", "192", "128")
    assert _steps(e)["F"].formula == "2 * B * h * T * (T + 1) / 2 * (d + d_v)"


# --- linear layers ------------------------------------------------------------------------------------------

def test_recurrent_state_and_flops():
    """Qwen3-Next config: 32 value heads of 128 x 128, 16 key heads, conv kernel 4, bf16 state."""
    e = explain(Variant.recurrent, WRITTEN["qwen3-next"], H200, 8192, 8, DType.bf16)
    steps = _steps(e)
    state = (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2
    assert steps["state"].value == state == 1_097_728
    assert steps["Q_state"].value == 2 * 8 * state
    assert steps["F"].value == 6 * 32 * 128 * 128 * 8
    assert steps["Q_state_pre"].value == 8 * state and steps["F_pre"].value == 6 * 32 * 128 * 128 * 8 * 8192
    assert "memory-bound" in e.conclusion[0]


def test_wrong_layer_for_the_variant_is_an_input_error():
    with pytest.raises(InputError, match="no layer type 'nope'.*local \\(sliding\\), global \\(full\\)"):
        explain(Variant.flash, WRITTEN["gemma3"], H200, layer_type="nope")
    with pytest.raises(InputError, match="has none"):
        explain(Variant.recurrent, WRITTEN["gemma3"], H200)
    with pytest.raises(InputError, match="use --variant recurrent"):
        explain(Variant.naive, WRITTEN["qwen3-next"], H200, layer_type="linear")
    with pytest.raises(InputError, match="needs a linear layer type"):
        explain(Variant.recurrent, WRITTEN["qwen3-next"], H200, layer_type="full")
    with pytest.raises(InputError, match="--q-len"):
        explain(Variant.flash, WRITTEN["gemma3"], H200, q_len=4)
    with pytest.raises(InputError, match="--mla-sparse-fp8"):
        explain(Variant.paged, WRITTEN["gemma3"], H200, mla_sparse_fp8=True)


# --- explain and the report price the same layer --------------------------------------------------------------

@pytest.mark.parametrize("key", list(WRITTEN))
def test_explain_agrees_with_the_report_per_layer_type(key):
    model = WRITTEN[key]
    prefill = {(r.layer_type, r.variant): r for r in prefill_report(model, H200, 5000, 1, DType.bf16).rows}
    decode = {(r.layer_type, r.variant): r for r in decode_report(model, H200, [8192] * 2, dtype=DType.bf16).rows}
    for name in model.layer_counts:
        if model.layer_types[name].kind is LayerKind.linear:
            e = _steps(explain(Variant.recurrent, model, H200, 5000, 2, DType.bf16, layer_type=name,
                               context_lens=[8192] * 2))
            assert e["t_floor"].value == decode[(name, "recurrent")].t_floor_s
            continue
        for variant in (Variant.naive, Variant.flash):
            e = _steps(explain(variant, model, H200, 5000, 1, DType.bf16, layer_type=name))
            row = prefill[(name, variant.value)]
            assert (e["Q_total"].value, e["F"].value, e["t_floor"].value) == (row.hbm_bytes, row.flops, row.t_floor_s)
        for variant in (Variant.paged, Variant.split_kv):
            e = _steps(explain(variant, model, H200, dtype=DType.bf16, layer_type=name, context_lens=[8192] * 2))
            row = decode[(name, variant.value)]
            assert (e["Q_total"].value, e["t_floor"].value) == (row.hbm_bytes, row.t_floor_s)


LLAMA = load_model("llama-3-8b")
#: The variants of softmax attention (recurrent derives linear-attention layers; tests/explain/test_init.py)
SOFTMAX = tuple(v for v in EXPLAINED if v is not Variant.recurrent)


def test_default_follows_the_chapter_order():
    e = explain(Variant.naive, LLAMA, H100)
    order = [s.quantity for section in e.sections for s in section.steps]
    chapter = ["S", "P", "Q_qk", "Q_softmax", "Q_pv", "Q_total", "F", "I", "I_compulsory", "t_memory",
               "t_compute", "I_star", "ratio", "t_model", "t_model_compute", "T_max"]
    positions = [order.index(q) for q in chapter]
    assert positions[:9] == sorted(positions[:9])           # S .. compulsory intensity
    assert order.index("I_star") < order.index("ratio") < order.index("t_model") < order.index("T_max")


def test_explain_agrees_with_report():
    report = prefill_report(LLAMA, H100)
    naive, flash = report.rows
    steps = _steps(explain(Variant.naive, LLAMA, H100))
    assert steps["Q_total"].value == naive.hbm_bytes and steps["t_floor"].value == naive.t_floor_s
    assert steps["F"].value == naive.flops and steps["ratio"].value == naive.ridge_ratio
    fsteps = _steps(explain(Variant.flash, LLAMA, H100))
    assert fsteps["Q_total"].value == flash.hbm_bytes and fsteps["t_floor"].value == flash.t_floor_s
    assert fsteps["Q_tiled"].value == flash.hbm_bytes_tiled
    decode = decode_report(LLAMA, H100, [8192])
    paged, split = decode.rows
    assert _steps(explain(Variant.paged, LLAMA, H100))["t_floor"].value == paged.t_floor_s
    ssteps = _steps(explain(Variant.split_kv, LLAMA, H100))
    assert ssteps["t_floor"].value == split.t_floor_s and ssteps["Q_total"].value == split.hbm_bytes


def test_merge_matches_the_chapter():
    steps = _steps(explain(Variant.merge, LLAMA, H100, dtype=DType.bf16))
    assert steps["row_bytes"].value == 776 and steps["row_flops"].value == 390      # "776 bytes ... 390 FLOPs"
    assert steps["I"].value == pytest.approx(0.5, abs=0.01)


def test_decode_intensity_is_four():
    steps = _steps(explain(Variant.paged, LLAMA, H100, context_lens=[2500] * 3))
    assert steps["I_kv"].value == 4.0                                               # 2h / (b h_kv)
    assert steps["f"].value == pytest.approx(24 / 132)


@pytest.mark.parametrize("variant", SOFTMAX)
@pytest.mark.parametrize("model_name, gpu_name, dtype, causal", [
    ("llama-3-70b", "h200-sxm", DType.bf16, True),
    ("mixtral-8x7b", "mi300x", DType.fp16, False),      # no exp rate in the spec
    ("gemma-2-9b", "a100-40gb", DType.fp32, True),
])
def test_every_variant_derives_on_several_specs(variant, model_name, gpu_name, dtype, causal):
    e = explain(variant, load_model(model_name), load_gpu(gpu_name), 3000, 2, dtype, causal,
                context_lens=[100, 7000], page_size=32, splits=3 if variant is Variant.split_kv else None)
    text = render_explanation(e)
    assert text.startswith(f"{variant.value} attention") and e.sections
    assert render_explanation(e, markdown=True).count("| quantity |") == len(e.sections)


@settings(max_examples=25, deadline=None)
@given(heads=st.sampled_from([(32, 8, 128), (64, 8, 128), (16, 16, 64), (28, 4, 128), (8, 1, 256)]),
       seq_len=st.integers(1, 40_000), batch=st.integers(1, 8), causal=st.booleans(),
       lens=st.lists(st.integers(1, 50_000), min_size=1, max_size=5), page=st.sampled_from([1, 16, 128]),
       splits=st.integers(1, 40), variant=st.sampled_from(SOFTMAX))
def test_formulas_agree_with_the_cost_functions_on_random_shapes(heads, seq_len, batch, causal, lens, page, splits,
                                                                  variant):
    """explain() raises ExplainMismatch if any shown formula disagrees with rooflab's value."""
    h, h_kv, d = heads
    model = ModelSpec(name="m", display_name="M", num_layers=4, hidden_size=h * d, num_qo_heads=h,
                      num_kv_heads=h_kv, head_dim=d, ffn_size=4 * h * d, vocab_size=1000, max_context_len=8192,
                      source="test")
    split = splits if variant is Variant.split_kv else None
    explain(variant, model, H100, seq_len, batch, DType.fp16, causal, lens, page, splits=split)


def test_unexplained_variant_is_an_input_error():
    with pytest.raises(InputError, match="cascade"):
        explain(Variant.cascade, LLAMA, H100)


def test_b200_exp_units_tie_the_tensor_cores_at_d128():
    e = explain(Variant.flash, load_model("llama-3-8b"), load_gpu("b200"), seq_len=8192)
    steps = {s.quantity: s.value for section in e.sections for s in section.steps}
    # t_exp_sfu / t_compute = (1 / 4.65e12) / (4 x 128 / 2.25e15) per pair = 0.945
    assert 0.9 <= steps["exp_over_tensor"] <= 1.1
    assert steps["exp_over_tensor"] == pytest.approx(2.25e15 / (4 * 128) / 4.65e12, rel=1e-3)


# --- one GPU of a deployment --------------------------------------------------------------------------------------

def test_explain_derives_one_gpu_of_a_tp_group_with_the_reports_heads():
    """--tp 8: each GPU computes 1/8 of the query heads (cost.layers.layer_heads, as the step splits them); with
    DCP 8 inside the group the fullest GPU holds ceil(2,000 pages / 8) = 250 pages of each 32,000-token sequence
    and computes the query heads of all 8 ranks (TP / DCP = 1 rank's shard: all 128)."""
    from rooflab.cost.batch import DecodeBatch
    from rooflab.deployment import Deployment

    gpu, lens = load_gpu("h200-sxm"), DecodeBatch.uniform(32000, 8)
    ds = load_model("deepseek-v3")
    tp = explain(Variant.paged, ds, gpu, context_lens=lens, deployment=Deployment(tensor_parallel=8))
    dcp = explain(Variant.paged, ds, gpu, context_lens=lens,
                  deployment=Deployment(tensor_parallel=8, decode_context_parallel=8))
    assert int(_symbols(tp)["h"]) == 16 and int(_symbols(dcp)["h"]) == 128
    assert "context 4,000" in dcp.title and "(TP 8, DCP 8)" in dcp.title and "one GPU of 8 x" in dcp.title
    llama = load_model("llama-3-70b")
    flash = explain(Variant.flash, llama, gpu, deployment=Deployment(tensor_parallel=4))
    assert int(_symbols(flash)["h"]) == 16 and int(_symbols(flash)["h_kv"]) == 2


@pytest.mark.parametrize("variant, kw, needle", [
    (Variant.paged, dict(tensor_parallel=8, decode_context_parallel=8), "DCP <= TP / H_kv"),
    (Variant.flash, dict(tensor_parallel=3), "does not divide the 64 query heads"),
    (Variant.flash, dict(kv_parallel=2), "apply to --variant paged or split_kv"),
    (Variant.naive, dict(tensor_parallel=2), "--tp applies to the flash"),
    (Variant.paged, dict(tensor_parallel=2, pipeline_parallel=2), "pipeline parallelism is the step's"),
])
def test_explain_refuses_deployments_it_does_not_derive(variant, kw, needle):
    from rooflab.deployment import Deployment

    with pytest.raises(InputError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        explain(variant, load_model("llama-3-70b"), load_gpu("h200-sxm"), deployment=Deployment(**kw))


# --- explain --shape: a bare attention shape derives as one layer of its model ------------------------------------

@pytest.mark.parametrize("variant", [Variant.naive, Variant.flash, Variant.paged, Variant.split_kv])
def test_a_shape_derives_the_figures_of_one_model_layer(variant):
    # Llama-3-8B's heads (32 / 8 x 128): the shape's derivation finds the same numbers as the model's, section by
    # section, except what counts the model's layers or weights (L, t_model, W, free, T_max, and what follows them)
    from rooflab.shape import parse_shape

    shape, h100 = parse_shape("4,32,8,4096,128"), load_gpu("h100-sxm")
    lens = [4096] * 4
    bare = explain(variant, shape.layer, h100, shape.seq_len, shape.batch, context_lens=lens)
    model = explain(variant, load_model("llama-3-8b"), h100, 4096, 4, context_lens=lens)
    layer_wide = {"L", "t_model", "t_model_compute", "W", "N", "free", "T_max", "slowdown"}
    ours, theirs = _steps(bare), _steps(model)
    common = set(ours) & set(theirs) - layer_wide
    assert common and all(ours[k] == theirs[k] for k in common)
    assert "(one layer, no model)" in bare.title


def test_explain_shape_cli():
    from typer.testing import CliRunner

    from rooflab.cli import app

    runner = CliRunner()
    ok = runner.invoke(app, ["explain", "--shape", "1,32,8,8192,128", "-v", "flash"])
    assert ok.exit_code == 0 and "attention H 32, H_kv 8, d 128 (one layer, no model)" in ok.stdout
    for args in (["--shape", "1,32,8,8192"], ["--shape", "1,32,8,8192,128", "-m", "llama-3-8b"],
                 ["--shape", "1,32,3,8192,128"], ["--shape", "1,32,8,8192,128", "-T", "1024"]):
        r = runner.invoke(app, ["explain", *args])
        assert r.exit_code == 2 and "--shape" in r.output
