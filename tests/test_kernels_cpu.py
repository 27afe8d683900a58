"""rooflab.kernels on a machine without CuPy: imports work, calls say what is missing and how to install it."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest

import rooflab.kernels as kernels
from rooflab.errors import MissingGpuError
from rooflab.kernels import _runtime, testing

KERNEL_FILES = sorted(p.name for p in resources.files("rooflab.kernels").iterdir() if p.name.endswith(".cu"))


def test_import_without_cupy_in_a_fresh_interpreter():
    code = ("import sys; sys.modules['cupy'] = None\n"
            "import rooflab, rooflab.kernels\n"
            "assert 'cupy' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


CALLS = {
    "softmax_rows": lambda: kernels.softmax_rows(None),
    "naive_attention": lambda: kernels.naive_attention(None, None, None),
    "flash_attention": lambda: kernels.flash_attention(None, None, None),
    "paged_decode": lambda: kernels.paged_decode(None, None, None, None, None),
    "paged_decode_partial": lambda: kernels.paged_decode_partial(None, None, None, None, None, 2),
    "merge_partials": lambda: kernels.merge_partials(None, None),
    "merge_states": lambda: kernels.merge_states(None, None, None, None),
    "precompile": lambda: kernels.precompile(),
    "attention_scores": lambda: kernels.attention_scores(None, None),
    "masked_softmax": lambda: kernels.masked_softmax(None, 1.0),
    "attention_values": lambda: kernels.attention_values(None, None),
    "mla_decode": lambda: kernels.mla_decode(None, None, None, None),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_launchers_without_cupy_raise_missing_gpu_error(monkeypatch, name):
    monkeypatch.setitem(sys.modules, "cupy", None)                   # `import cupy` now fails
    with pytest.raises(MissingGpuError) as info:
        CALLS[name]()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("CuPy is not installed")
    assert 'pip install "rooflab[gpu]"' in message and "rooflab[gpu-cuda13]" in message


@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_each_source_holds_one_kernel_and_inlines_the_common_header(filename):
    text = resources.files("rooflab.kernels").joinpath(filename).read_text(encoding="utf-8")
    assert len(re.findall(r"__global__", text)) == 1, "one kernel a file"
    source = _runtime.kernel_source(filename)
    assert "#include \"" not in source, "every local header is inlined"
    assert source.count("struct OnlineState {") == 1, "common.cuh inlined exactly once"
    assert "mma16816" in source and "namespace rl" in source


def test_the_kernel_files_are_the_ones_the_package_lists():
    assert {"flash_fwd.cu", "flash_fwd_hopper.cu", "flash_fwd_hopper_ws.cu", "wgmma_probe.cu", "paged_decode.cu",
            "merge_partials.cu", "merge_states.cu", "softmax_rows.cu"} <= set(KERNEL_FILES)
    for filename in KERNEL_FILES:
        assert filename in kernels.__doc__, f"{filename} is missing from rooflab.kernels' docstring"


@pytest.mark.parametrize("n, itemsize, expected", [
    (8192, 2, (8, 4, 256)),          # the [32, 8192, 8192] fp16 target: 16-byte loads, 4 in flight
    (8192, 4, (4, 4, 512)),
    (1, 2, (1, 1, 1)),
    (1000, 2, (8, 4, 32)),
    (4097, 2, (1, 8, 1024)),         # odd length: scalar loads
    (32768, 2, (8, 4, 1024)),
    (32768, 4, (4, 8, 1024)),
])
def test_softmax_config(n, itemsize, expected):
    vec, items, tpr = kernels.softmax_config(n, itemsize)
    assert (vec, items, tpr) == expected
    assert vec * items * tpr >= n


@pytest.mark.parametrize("n, itemsize, nst", [(8192, 2, 4), (8192, 4, 2), (1000, 2, 0), (20000, 2, 0), (4097, 2, 0)])
def test_softmax_plan_streams_long_aligned_rows(n, itemsize, nst):
    from rooflab.kernels.attention import softmax_plan

    vec, items, tpr, depth = softmax_plan(n, itemsize)
    assert depth == nst
    if depth:
        assert vec * itemsize == 16 and tpr > 32 and depth * items * tpr * 16 <= 64 * 1024


def test_softmax_config_refuses_rows_it_cannot_hold():
    with pytest.raises(ValueError, match="longer than the single-pass softmax"):
        kernels.softmax_config(2**15 + 1, 2)


def test_every_tolerance_has_a_reason():
    for key, tol in testing.TOLERANCES.items():
        assert tol.reason and tol.rel_l2 > 0, key


# ---------------------------------------------------------------- fp8 e4m3 codes (the fp8 KV cache's oracle)

def _e4m3_ties() -> np.ndarray:
    """Every midpoint between neighbouring finite e4m3 values, both signs."""
    pos = np.sort(testing.E4M3_VALUES[:0x7F])                     # 0 .. 448, the 127 finite codes
    mid = (pos[:-1] + pos[1:]) / 2
    return np.concatenate([mid, -mid])


def test_e4m3_every_code_round_trips():
    codes = np.arange(256, dtype=np.uint8)
    values = testing.e4m3_decode(codes)
    finite = ~np.isnan(values)
    assert finite.sum() == 254 and np.isnan(values[[0x7F, 0xFF]]).all()
    assert np.array_equal(testing.e4m3_encode(values[finite]), codes[finite])  # -0.0 keeps code 0x80
    assert set(testing.e4m3_encode(values[~finite]) & 0x7F) == {0x7F}          # NaN stays NaN


@pytest.mark.parametrize("code, value", [
    (0x00, 0.0), (0x01, 2.0**-9), (0x07, 7 * 2.0**-9), (0x08, 2.0**-6), (0x38, 1.0), (0x39, 1.125),
    (0x7E, 448.0), (0xFE, -448.0), (0xB8, -1.0), (0x81, -(2.0**-9)), (0x3F, 1.875), (0x40, 2.0),
])
def test_e4m3_known_values(code, value):
    # arXiv:2209.05433, Table 1: max 448 (S.1111.110), min normal 2^-6, min subnormal 2^-9 (S.0000.001)
    assert testing.e4m3_decode(np.array([code], np.uint8))[0] == value
    assert testing.e4m3_encode(np.array([value]))[0] == code


@pytest.mark.parametrize("x, code", [
    (1.0625, 0x38),          # halfway between 1 (mantissa 000) and 1.125 (001): to even, down
    (1.1875, 0x3A),          # halfway between 1.125 (001) and 1.25 (010): to even, up
    (1.9375, 0x40),          # halfway between 1.875 and 2: up into the next binade
    (2.0**-10, 0x00),        # half the smallest subnormal: to even, zero
    (3 * 2.0**-10, 0x02),    # halfway between subnormals 1 and 2: to 2
    (7.5 * 2.0**-9, 0x08),   # halfway between the largest subnormal and the smallest normal
    (464.0, 0x7E),           # halfway between 448 and 480 (which is NaN's code): 448
    (470.0, 0x7E), (1e6, 0x7E), (np.inf, 0x7E), (-np.inf, 0xFE),   # saturating
    (-0.0, 0x80), (1e-30, 0x00), (-1e-30, 0x80),
])
def test_e4m3_encode_rounds_to_nearest_even_and_saturates(x, code):
    assert testing.e4m3_encode(np.array([x]))[0] == code


def test_e4m3_encode_nan():
    got = testing.e4m3_encode(np.array([np.nan, -np.nan]))
    assert list(got) == [0x7F, 0xFF]


def test_e4m3_encode_agrees_with_round_to_format():
    # An independent emulation (rooflab.numerics.formats, float64 throughout) on random values over
    # the whole range and on every tie; non-saturating there, so only |x| <= 448 is compared.
    from rooflab.numerics.formats import float_format, round_to_format
    from rooflab.units import DType

    rng = np.random.default_rng(7)
    x = rng.choice([-1.0, 1.0], 20000) * 2.0 ** rng.uniform(-12, np.log2(448), 20000)
    x = np.concatenate([x, _e4m3_ties()])
    expected = round_to_format(x, float_format(DType.fp8_e4m3))
    assert np.array_equal(testing.e4m3_decode(testing.e4m3_encode(x)), expected)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_e4m3_encode_is_the_same_from_fp16_and_fp32(dtype):
    x = np.random.default_rng(3).standard_normal(5000) * 40
    x = np.concatenate([x, _e4m3_ties()]).astype(dtype)
    assert np.array_equal(testing.e4m3_encode(x), testing.e4m3_encode(x.astype(np.float64)))


def test_e4m3_decode_refuses_other_dtypes():
    with pytest.raises(ValueError, match="uint8"):
        testing.e4m3_decode(np.zeros(3, np.int16))


# ---------------------------------------------------------------- the variants' fp64 oracles (rooflab.numerics.variants)

def _qkv(seed: int = 0, heads: int = 4, kv_heads: int = 2, q_len: int = 9, kv_len: int = 13, d: int = 8):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((2, heads, q_len, d)), rng.standard_normal((2, kv_heads, kv_len, d)),
            rng.standard_normal((2, kv_heads, kv_len, d)))


def test_oracle_window_of_one_returns_each_rows_own_value():
    from rooflab.numerics import masked_attention_reference

    q, k, v = _qkv(q_len=13, kv_len=13)
    o, lse = masked_attention_reference(q, k, v, window=1)
    assert np.allclose(o, np.repeat(v, 2, axis=1))
    assert np.allclose(lse, np.einsum("bhqd,bhqd->bhq", q, np.repeat(k, 2, axis=1)) / np.sqrt(8))


def test_oracle_window_longer_than_the_context_is_causal():
    from rooflab.numerics import attention_reference, masked_attention_reference

    q, k, v = _qkv()
    for window in (13, 14, 10**6):
        o, lse = masked_attention_reference(q, k, v, window=window)
        o_ref, lse_ref = attention_reference(q, k, v, causal=True)
        assert np.allclose(o, o_ref) and np.allclose(lse, lse_ref)


def test_oracle_dominant_sink_takes_the_mass():
    from rooflab.numerics import masked_attention_reference

    q, k, v = _qkv()
    o, lse = masked_attention_reference(q, k, v, sinks=np.array([60.0, 0.0, -np.inf, 1.0]))
    assert np.abs(o[:, 0]).max() < 1e-20 and np.allclose(lse[:, 0], 60.0)
    o_plain, lse_plain = masked_attention_reference(q, k, v)
    assert np.allclose(o[:, 2], o_plain[:, 2]) and np.allclose(lse[:, 2], lse_plain[:, 2])   # -inf: no sink
    # a sink s adds e^s to the denominator: lse = ln(e^lse_plain + e^s), o shrinks by e^lse_plain / e^lse
    assert np.allclose(lse[:, 3], np.logaddexp(lse_plain[:, 3], 1.0))
    assert np.allclose(o[:, 3], o_plain[:, 3] * np.exp(lse_plain[:, 3] - lse[:, 3])[..., None])


def test_oracle_rows_whose_window_holds_no_key():
    from rooflab.numerics import masked_attention_reference

    q, k, v = _qkv(q_len=20, kv_len=6)                              # rows 0..13 sit before key 0
    o, lse = masked_attention_reference(q, k, v, window=3)
    assert (o[:, :, :14] == 0).all() and np.isneginf(lse[:, :, :14]).all()
    assert np.isfinite(lse[:, :, 14:]).all()
    o, lse = masked_attention_reference(q, k, v, window=3, sinks=np.full(4, 2.5))
    assert (o[:, :, :14] == 0).all() and np.allclose(lse[:, :, :14], 2.5)   # only the sink: o 0, lse the sink


def test_oracle_chunks_and_partials_merge_into_the_whole():
    from rooflab.numerics import masked_attention_reference, merge_many, visible_keys

    seen = visible_keys(6, 10, chunk=4)                             # positions 4..9
    assert seen.sum(axis=1).tolist() == [1, 2, 3, 4, 1, 2]
    q, k, v = _qkv(kv_len=40, q_len=40)
    whole = masked_attention_reference(q, k, v, window=9, chunk=16, sinks=np.ones(4))
    cuts = [0, 7, 16, 33, 40]
    parts = [masked_attention_reference(q, k, v, window=9, chunk=16, sinks=np.ones(4) if i == 0 else None,
                                        kv_start=a, kv_stop=b) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    o, lse = merge_many([p[0] for p in parts], [p[1] for p in parts])
    assert np.allclose(o, whole[0]) and np.allclose(lse, whole[1])


def test_oracle_mla_is_attention_with_the_latent_as_keys_and_its_head_as_values():
    from rooflab.numerics import attention_reference, mla_decode_reference

    rng = np.random.default_rng(3)
    q, c = rng.standard_normal((3, 5, 24)), rng.standard_normal((11, 24))
    o, lse = mla_decode_reference(q, c, value_dim=16)
    o_ref, lse_ref = attention_reference(q.transpose(1, 0, 2)[None], c[None, None], c[None, None, :, :16], causal=True)
    assert o.shape == (3, 5, 16) and lse.shape == (3, 5)
    assert np.allclose(o, o_ref[0].transpose(1, 0, 2)) and np.allclose(lse, lse_ref[0].T)


def test_split_ranges_cover_the_decode_key_range_in_whole_pages():
    for ctx, q_len, window, chunk, splits, page in [(1000, 1, None, None, 4, 16), (1000, 3, 300, None, 5, 16),
                                                    (77, 2, 5, None, 3, 7), (500, 8, None, 128, 6, 1)]:
        first, stop = testing.decode_key_range(ctx, q_len, window, chunk)
        ranges = testing.split_ranges(ctx, splits, page, q_len, window, chunk)
        assert ranges[0][0] == first and ranges[-1][1] == stop
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert all((hi - lo == 0) or lo % page == 0 or lo == first for lo, hi in ranges)


@pytest.mark.parametrize("name, kwargs, match", [
    ("flash_attention", {"window": 0, "causal": True}, "window"),
    ("flash_attention", {"chunk": 1.5, "causal": True}, "chunk"),
    ("flash_attention", {"window": 16}, "causal=True"),
])
def test_visibility_arguments_are_checked_before_anything_else(name, kwargs, match):
    from rooflab.kernels._runtime import check_visibility

    with pytest.raises(ValueError, match=match):
        check_visibility(kwargs.get("causal", False), kwargs.get("window"), kwargs.get("chunk"))
