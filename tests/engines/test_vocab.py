"""Tests of rooflab/engines/vocab.py: the engines' KV-cache dtype names (an unknown one lists them) and
their accountings by version (bad ones refused).
"""

from __future__ import annotations

import pytest

from rooflab.engines import Accounting, Engine, parse_accounting, parse_engine, parse_kv_cache_dtype
from rooflab.errors import InputError
from rooflab.units import DType


# --- vocabulary -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, dtype, sparse", [
    ("auto", None, False), ("fp8", DType.fp8_e4m3, False), ("FP8_E4M3", DType.fp8_e4m3, False),
    ("fp8_e5m2", DType.fp8_e5m2, False), ("fp8_ds_mla", DType.fp8_e4m3, True), ("bfloat16", DType.bf16, False),
    ("half", DType.fp16, False), ("fp8_inc", DType.fp8_e4m3, False)])
def test_kv_cache_dtype_names(name, dtype, sparse):
    kv = parse_kv_cache_dtype(name)
    assert kv.dtype is dtype and kv.mla_sparse_fp8 is sparse


def test_unknown_kv_cache_dtype_lists_the_names():
    with pytest.raises(InputError, match="'int4' is not a KV-cache dtype; choose one of auto, fp8"):
        parse_kv_cache_dtype("int4")


@pytest.mark.parametrize("engine, text, expected", [
    (Engine.vllm, None, Accounting.vllm_v1), (Engine.vllm, "v0", Accounting.vllm_v0),
    (Engine.vllm, "0.6.4", Accounting.vllm_v0_6_4), (Engine.vllm, "vllm-v0.2", Accounting.vllm_v0_2),
    (Engine.vllm, "0.8", Accounting.vllm_v0_8),
    (Engine.sglang, None, Accounting.sglang_v0_5), (Engine.sglang, "V0.4", Accounting.sglang_v0_4)])
def test_accountings(engine, text, expected):
    assert parse_accounting(engine, text) is expected


@pytest.mark.parametrize("engine, text, needle", [
    (Engine.vllm, "sglang-v0.4", "is SGLang's, but --engine is vllm"),
    (Engine.vllm, "v2", "neither a vLLM release .* nor one of its accountings \\(v0.2, v0.6.4, v0, v0.8, v1\\)"),
    (Engine.vllm, "0.30.0", "no vLLM accounting rooflab models covers v0.30.0 .*v1: vLLM V1 v0.9.1 - v0.29"),
    (Engine.vllm, "0.2.4", "no vLLM accounting rooflab models covers v0.2.4"),
    (Engine.sglang, "0.5.11", "no SGLang accounting rooflab models covers v0.5.11"),
    (Engine.vllm, "0.10.1; x", "neither a vLLM release"),
    (Engine.sglang, "v1", "neither a SGLang release .* nor one of its accountings \\(v0.4, v0.5\\)")])
def test_bad_accountings(engine, text, needle):
    with pytest.raises(InputError, match=needle):
        parse_accounting(engine, text)


@pytest.mark.parametrize("engine, text, accounting, release", [
    # the ranges of vocab.RELEASE_RANGE, read from each release's wheel (its docstring cites the files)
    (Engine.vllm, "0.10.1", Accounting.vllm_v1, (0, 10, 1)), (Engine.vllm, "v0.8.4", Accounting.vllm_v0_8, (0, 8, 4)),
    (Engine.vllm, "0.6.3.post1", Accounting.vllm_v0_2, (0, 6, 3)), (Engine.vllm, "0.2.5", Accounting.vllm_v0_2, (0, 2, 5)),
    (Engine.vllm, "0.6.4.post1", Accounting.vllm_v0_6_4, (0, 6, 4)), (Engine.vllm, "0.6.5", Accounting.vllm_v0, (0, 6, 5)),
    (Engine.vllm, "0.7.3", Accounting.vllm_v0, (0, 7, 3)),
    # V1 the default from v0.8.0 where V0 still ships (to v0.10.x)
    (Engine.vllm, "0.8.0rc3.dev5+g5eeabc2a.d20250318", Accounting.vllm_v0_8, (0, 8, 0)),
    (Engine.vllm, "0.9.0.1", Accounting.vllm_v0_8, (0, 9, 0, 1)), (Engine.vllm, "0.9.1", Accounting.vllm_v1, (0, 9, 1)),
    (Engine.vllm, "0.10.1.1", Accounting.vllm_v1, (0, 10, 1, 1)), (Engine.vllm, "0.20.2", Accounting.vllm_v1, (0, 20, 2)),
    (Engine.sglang, "0.4.6.post2", Accounting.sglang_v0_4, (0, 4, 6)), (Engine.sglang, "0.1.17", Accounting.sglang_v0_4, (0, 1, 17)),
    (Engine.sglang, "0.5.2", Accounting.sglang_v0_4, (0, 5, 2)), (Engine.sglang, "0.5.3", Accounting.sglang_v0_5, (0, 5, 3)),
    (Engine.sglang, "0.5.10.post1", Accounting.sglang_v0_5, (0, 5, 10)),
    # the labels keep their meaning, without a release
    (Engine.vllm, "v1", Accounting.vllm_v1, None), (Engine.vllm, "v0", Accounting.vllm_v0, None),
    (Engine.vllm, "v0.2", Accounting.vllm_v0_2, None), (Engine.vllm, "vllm-v0.8", Accounting.vllm_v0_8, None),
    (Engine.sglang, "v0.4", Accounting.sglang_v0_4, None), (Engine.sglang, "0.5", Accounting.sglang_v0_5, None)])
def test_engine_version_a_release_or_a_label(engine, text, accounting, release):
    from rooflab.engines.vocab import EngineVersion, parse_engine_version

    assert parse_engine_version(engine, text) == EngineVersion(accounting, release)
    assert parse_accounting(engine, text) is accounting


def test_every_release_range_lies_in_the_labels_text():
    """RELEASE_RANGE and Accounting.releases say one thing: each range's first release is in its label's text."""
    from rooflab.engines.vocab import RELEASE_RANGE, release_text

    assert set(RELEASE_RANGE) == set(Accounting)
    for accounting, (first, _) in RELEASE_RANGE.items():
        assert release_text(first) in accounting.releases


@pytest.mark.parametrize("call", [lambda bad: parse_engine(bad), lambda bad: parse_accounting(bad, None),
                                  lambda bad: parse_accounting("vllm", bad or 3), lambda bad: parse_kv_cache_dtype(bad)])
@pytest.mark.parametrize("bad", [None, 3, ["vllm"], "x" * 10_000])
def test_parsers_refuse_what_is_no_name_in_a_short_message(call, bad):
    """Issue 24 round 2 D9's class: parse_accounting(None, ...) ended in KeyError, a GpuSpec was echoed whole (the
    version None is the engine's default, so 3 stands for it there)."""
    with pytest.raises(InputError, match="^--(engine|engine-version|kv-cache-dtype) ") as exc:
        call(bad)
    assert len(str(exc.value)) < 400


# --- the engines: one vocabulary, the accounting a subset ---------------------------------------------------------

def test_the_accountings_engine_is_the_one_engine_vocabulary():
    """Review (session 12): rooflab.engines.vocab kept a second Engine enum (vllm, sglang) beside rooflab.vocab's."""
    from rooflab import vocab

    assert Engine is vocab.Engine and parse_engine(" VLLM ") is vocab.Engine.vllm
    assert {a.engine for a in Accounting} == {vocab.Engine.vllm, vocab.Engine.sglang}


@pytest.mark.parametrize("text", ["tensorrt-llm", "TRT-LLM", "trtllm", "tensorrt_llm"])
def test_capacity_refuses_tensorrt_llm_by_name(text):
    """TensorRT-LLM is an engine rooflab models (step, serve) but not one whose KV-cache accounting it follows."""
    with pytest.raises(InputError, match=r"^--engine '.*': rooflab models TensorRT-LLM's scheduler and step kernels.*"
                                         r"not its KV-cache accounting; capacity follows vllm or sglang"):
        parse_engine(text)


def test_capacity_refuses_the_tensorrt_llm_member_in_a_short_message():
    from rooflab.vocab import Engine as OneEngine

    with pytest.raises(InputError, match="^--engine 'tensorrt-llm': ") as exc:
        parse_engine(OneEngine.trtllm)
    assert "Engine.trtllm" not in str(exc.value)
    with pytest.raises(InputError, match="^--engine 'tensorrt-llm': "):
        parse_accounting(OneEngine.trtllm, None)


# --- --engine-version read one way; VLLM_USE_V1's 0 / 1 (hostile session12 D35, D36, D44) -------------------------

@pytest.mark.parametrize("engine, text, accounting, release", [
    (Engine.sglang, "V0.4.6", Accounting.sglang_v0_4, (0, 4, 6)),
    (Engine.sglang, "V0.5.3", Accounting.sglang_v0_5, (0, 5, 3)),
    (Engine.vllm, "V0.8.4", Accounting.vllm_v0_8, (0, 8, 4)), (Engine.vllm, "V0.10.1", Accounting.vllm_v1, (0, 10, 1))])
def test_a_capital_v_release_is_the_same_release(engine, text, accounting, release):
    """D35: 'V0.8.4' read as no release: vLLM's V1 default (under --engine sglang, vLLM itself)."""
    from rooflab.engines.vocab import EngineVersion, parse_engine_version

    assert parse_engine_version(engine, text) == EngineVersion(accounting, release)
    assert parse_engine_version(engine, "v" + text[1:]) == parse_engine_version(engine, text)


@pytest.mark.parametrize("engine, text, needle", [
    (Engine.vllm, "V99.0", "^--engine-version 'V99.0': no vLLM accounting rooflab models covers v99.0"),
    (Engine.sglang, "V0.30", "^--engine-version 'V0.30': no SGLang accounting rooflab models covers v0.30"),
    (Engine.vllm, "0.10.99999", "^--engine-version: '0.10.99999' is not an engine release: each of its numbers is "
                                "below 10,000$")])
def test_a_release_no_accounting_holds_is_refused_naming_the_option(engine, text, needle):
    """D35 (V99.0 was taken as vLLM's default) and D36 (0.10.99999 was refused naming EngineSettings.release)."""
    from rooflab.engines.vocab import parse_engine_version

    with pytest.raises(InputError, match=needle) as exc:
        parse_engine_version(engine, text)
    assert "EngineSettings" not in str(exc.value)


@pytest.mark.parametrize("use_v1, accounting", [(0, Accounting.vllm_v0), (False, Accounting.vllm_v0),
                                                (1, Accounting.vllm_v0_8), (True, Accounting.vllm_v0_8)])
def test_use_v1_takes_vllm_use_v1s_own_zero_and_one(use_v1, accounting):
    """D44: use_v1 was compared by identity, so VLLM_USE_V1's 0 gave 'vLLM v0.8.4 has no V0 engine'."""
    from rooflab.engines.vocab import EngineVersion, parse_engine_version

    assert parse_engine_version("vllm", "0.8.4", use_v1) == EngineVersion(accounting, (0, 8, 4))
    assert parse_engine_version("vllm", None, use_v1).accounting.is_v1 is bool(use_v1)


@pytest.mark.parametrize("use_v1", ["0", "1", 2, -1, 1.0, [1]])
def test_use_v1_refuses_anything_else_naming_it(use_v1):
    from rooflab.engines.vocab import parse_engine_version

    with pytest.raises(InputError, match=r"^use_v1 \(--vllm-use-v1\) must be True / False or VLLM_USE_V1's 1 / 0"):
        parse_engine_version("vllm", "0.8.4", use_v1)


# --- a label is one release (hostile session12 D37) ----------------------------------------------------------------

def test_a_label_stands_for_one_release_of_its_accounting():
    """label_release: every accounting's newest release (a series' x: v0 is v0.10.x), in its range, but v1's
    v0.19.x (before V1's v0.20.0 defaults) and sglang-v0.4's v0.4.5, the last release of the v0.4.0 fraction table
    its label has always priced (settings.resolve computes a label's every term there: tests/engines/
    test_settings.py)."""
    from rooflab.engines.vocab import in_range, label_release, release_text

    texts = {a.short: release_text(label_release(a)) for a in Accounting}
    assert texts == {"v0.2": "v0.6.3", "v0.6.4": "v0.6.4", "v0": "v0.10.x", "v0.8": "v0.9.0.1", "v1": "v0.19.x",
                     "v0.4": "v0.4.5", "v0.5": "v0.5.10"}
    assert all(in_range(a, label_release(a)) for a in Accounting)


# --- one range table, one range check, texts built from it (reviewer's finding 8) ----------------------------------

def test_the_releases_text_is_built_from_release_range():
    """Accounting.releases was a second table written beside RELEASE_RANGE ('v0.9.1 - v0.29' while the help said
    0.20); it is now span_text of the row, with vLLM's generation: each release the row ends in shows, a last of
    fewer numbers as its series (v0.29.x), one release alone."""
    from rooflab.engines.vocab import RELEASE_RANGE, span_text

    assert {a.short: a.releases for a in Accounting} == {
        "v0.2": "vLLM V0 v0.2.5 - v0.6.3", "v0.6.4": "vLLM V0 v0.6.4", "v0": "vLLM V0 v0.6.5 - v0.10.x",
        "v0.8": "vLLM V1 v0.8.0 - v0.9.0.1", "v1": "vLLM V1 v0.9.1 - v0.29.x",
        "v0.4": "SGLang v0.1.17 - v0.5.2", "v0.5": "SGLang v0.5.3 - v0.5.10"}
    assert all(a.releases.endswith(span_text(RELEASE_RANGE[a])) for a in Accounting)


@pytest.mark.parametrize("release, inside", [((0, 9, 0), True), ((0, 9, 0, 1), True), ((0, 8, 0), True),
                                             ((0, 7, 3), False), ((0, 9, 1), False), ((0, 8), False)])
def test_in_span_is_the_one_range_check(release, inside):
    """in_span: first <= release and the release's first numbers, as many as last has, <= last: vllm-v0.8's
    v0.8.0 - v0.9.0.1 holds v0.9.0 and its .1, not v0.9.1; (0, 29) holds all of v0.29.x. in_range, engines.memory's
    absorbed MLA copies and engines.profile's FlashInfer sampler all ask it."""
    from rooflab.engines.vocab import RELEASE_RANGE, in_range, in_span

    assert in_span(release, RELEASE_RANGE[Accounting.vllm_v0_8]) is inside
    assert in_range(Accounting.vllm_v0_8, release) is inside
    assert in_span((0, 29, 7), ((0, 9, 1), (0, 29))) and not in_span((0, 30, 0), ((0, 9, 1), (0, 29)))


def test_the_generations_and_labels_texts_come_from_the_table():
    from rooflab.engines.vocab import generations_text, labels_text

    assert generations_text() == "V0 to v0.10.x, V1 from v0.8.0"
    assert labels_text(Engine.sglang) == "v0.4 (v0.1.17 - v0.5.2), v0.5 (default, v0.5.3 - v0.5.10)"
    assert "v1 (default, V1 v0.9.1 - v0.29.x)" in labels_text(Engine.vllm)


def test_a_value_a_log_states_is_refused_naming_where_it_came_from():
    """The parsers of text a log states as well as an option name the source they are given (a log's line), never
    the option nobody typed (hostile session 16: a log's 'garbage' logprobs_mode refused as --logprobs-mode)."""
    from rooflab.engines.vocab import parse_logprobs_mode

    where = "--engine-log a.log line 3: logprobs_mode"
    with pytest.raises(InputError, match=r"^--engine-log a\.log line 3: logprobs_mode must be one of .*'garbage'"):
        parse_logprobs_mode("garbage", where)
    with pytest.raises(InputError, match=r"^--engine-log a\.log line 3: kv_cache_dtype 'garbage' is not a KV"):
        parse_kv_cache_dtype("garbage", where="--engine-log a.log line 3: kv_cache_dtype")
    with pytest.raises(InputError, match=r"^--logprobs-mode must be one of"):
        parse_logprobs_mode("garbage")


@pytest.mark.parametrize("value, images", [({"image": 0}, 0), ({"image": {"count": 3, "width": 512}}, 3), ({}, None)])
def test_image_limit_reads_vllms_dict(value, images):
    """vLLM's --limit-mm-per-prompt, parsed: {"image": N} or its per-modality {"image": {"count": N}} (the CLI's
    JSON and a log's printed dict alike)."""
    from rooflab.engines.vocab import image_limit

    assert image_limit(value) == images


@pytest.mark.parametrize("value", [{"video": 1}, {"image": -1}, {"image": True}, {"image": {}}, [1], None,
                                   {"image": (1 << 31) + 1}, {"image": {"count": 10 ** 20}}])
def test_image_limit_refusals_name_the_source(value):
    from rooflab.engines.vocab import image_limit

    with pytest.raises(InputError, match=r"^--engine-log a\.log line 2: limit_mm_per_prompt"):
        image_limit(value, "--engine-log a.log line 2: limit_mm_per_prompt")


def test_image_limit_takes_the_largest_count():
    """A count of MAX_TOKENS (2^31, limits.py) is the largest taken, as EngineSettings takes it."""
    from rooflab.engines.vocab import image_limit

    assert image_limit({"image": 1 << 31}) == 1 << 31


# vLLM's --kv-cache-dtype names by release (VLLM_KV_CACHE_DTYPES, read in the wheels: v0.3.0 arg_utils.py:129,
# v0.4.1 :178, v0.4.3 :195, v0.7.3 :359-361, v0.10.0 config.py:1609, v0.11.0 config/cache.py:25-26, v0.11.1 :24-32,
# v0.18.0 :14-23)
@pytest.mark.parametrize("name, release, taken", [
    ("fp8_e4m3", (0, 7, 3), True), ("fp8", (0, 7, 3), True), ("auto", (0, 7, 3), True),
    ("bfloat16", (0, 7, 3), False), ("fp8_ds_mla", (0, 7, 3), False), ("fp8_inc", (0, 7, 3), False),
    ("fp8_inc", (0, 9, 2), False), ("fp8_inc", (0, 10, 0), True), ("bfloat16", (0, 10, 2), False),
    ("bfloat16", (0, 11, 0), True), ("fp8_ds_mla", (0, 11, 0), False), ("fp8_ds_mla", (0, 11, 1), True),
    ("float16", (0, 17, 1), False), ("float16", (0, 18, 0), True), ("float16", (0, 29, 0), True),
    ("fp8", (0, 3, 0), False), ("fp8_e5m2", (0, 3, 0), True), ("fp8_e5m2", (0, 4, 2), False),
    ("fp8", (0, 4, 2), True), ("fp8_e4m3", (0, 4, 3), True), ("auto", (0, 2, 5), False),
    ("bf16", (0, 29, 0), False), ("fp16", (0, 18, 0), False), ("FP8_E4M3", (0, 7, 3), True)])
def test_vllm_kv_cache_dtype_names_by_release(name, release, taken):
    from rooflab.engines.vocab import parse_kv_cache_dtype

    if taken:
        assert parse_kv_cache_dtype(name, Engine.vllm, release=release).name == name.lower()
    else:
        with pytest.raises(InputError, match=r"^--kv-cache-dtype '" + name + "'.* vLLM v" + r"\.".join(map(str, release))):
            parse_kv_cache_dtype(name, Engine.vllm, release=release)


def test_vllm_kv_cache_dtype_refusal_names_the_choices_and_the_first_release():
    from rooflab.engines.vocab import parse_kv_cache_dtype

    with pytest.raises(InputError, match=r"^--kv-cache-dtype 'fp8_ds_mla' is not one vLLM v0\.7\.3 takes \(its "
                                         r"choices: auto, fp8, fp8_e5m2, fp8_e4m3\); vLLM takes it from v0\.11\.1$"):
        parse_kv_cache_dtype("fp8_ds_mla", Engine.vllm, release=(0, 7, 3))
    with pytest.raises(InputError, match=r"no --kv-cache-dtype \(it came in v0\.3\.0\)"):
        parse_kv_cache_dtype("fp8", Engine.vllm, release=(0, 2, 5))
    with pytest.raises(InputError, match=r"^--kv-cache-dtype 'bf16' is not one vLLM v0\.11\.0 takes [^;]*$"):
        parse_kv_cache_dtype("bf16", Engine.vllm, release=(0, 11, 0))


def test_kv_cache_dtype_without_a_release_keeps_the_whole_vocabulary():
    """No release known (None), or another engine: the release table is not read (bf16, float16 as before)."""
    from rooflab.engines.vocab import parse_kv_cache_dtype

    for name in ("bf16", "float16", "fp8_ds_mla", "bfloat16"):
        assert parse_kv_cache_dtype(name, Engine.vllm).name == name
        assert parse_kv_cache_dtype(name, None, release=(0, 7, 3)).name == name
    assert parse_kv_cache_dtype("bfloat16", Engine.sglang, release=(0, 4, 0)).name == "bfloat16"
