"""Tests of rooflab/engines/profile.py: the modelled profile run. vLLM v0's sampler (vllm#10511) and forward pass
(vllm#10517) and v1's activation peak against v0.19's logs. Golden figures cite the public log they come from
(tests/data/engine_logs/SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines.profile import profile_run
from rooflab.engines.settings import resolve
from rooflab.units import GiB
from support import vllm


DATA = Path(__file__).resolve().parents[1] / "data" / "engine_logs"
H100 = load_gpu("h100-sxm")
LLAMA3 = load_model("llama-3-8b")
LLAMA31 = load_model(DATA / "models" / "llama-3.1-8b-instruct.yaml")
RTX3090 = load_gpu(DATA / "hardware" / "rtx-3090.yaml")


#: The modelled activation peak against a logged one: the sampler's bytes per logit are one constant per version.
ACTIVATION_REL = 0.05


# --- the profile run ------------------------------------------------------------------------------------------------

def _activation(model, gpu, settings):
    return profile_run(model, resolve(settings, model, gpu)).peak_bytes


def test_v0_sampler_reproduces_vllm_10511():
    """vllm#10511: Llama-3-8B, H100, V0 defaults (8,192 tokens over 256 sequences): 1.26 GiB logged. At the sort
    (profile.py's docstring cites each term): bf16 logits 2 + their fp32 copy 4 + sorted values 4 + int64 indices 8
    + the sort's int64 source indices 8 + CUB's alternate buffers 4 + 8 = 38 bytes a logit, beside the forward's
    8,192 x 4,096 bf16 hidden states."""
    s = vllm("v0", max_model_len=8192)
    run = profile_run(LLAMA3, resolve(s, LLAMA3, H100))
    assert run.sampler_bytes == 256 * 128256 * (2 + 4 + 4 + 8 + 8 + 4 + 8) + 8192 * 4096 * 2
    assert run.peak_bytes == run.sampler_bytes > run.forward_bytes
    assert run.peak_bytes == pytest.approx(1.26 * GiB, rel=ACTIVATION_REL)


def test_v0_few_sequences_sort_whole_and_the_forward_binds():
    """Below 128 rows PyTorch sorts all the rows at once (two int2 arrays 8 + 8, a key copy 4, CUB's buffers 4 + 8,
    beside the logits 2 + 4 and the outputs 4 + 8: 50 bytes a logit). Llama-3-8B at 2,048 tokens (max_model_len
    2048): with 256 sequences the sampler binds (256 x 128,256 x 38 + 2,048 x 4,096 x 2 = 1.18 GiB); with 32 the
    sampler (32 x 128,256 x 50 + the hidden states = 0.21 GiB) falls below the forward pass, 2,048 x (3 x 4,096 +
    3 x 14,336) x 2 = 0.211 GiB, which then is the peak."""
    many = profile_run(LLAMA3, resolve(vllm("v0", max_model_len=2048), LLAMA3, H100))
    assert many.peak_bytes == many.sampler_bytes == 256 * 128256 * 38 + 2048 * 4096 * 2
    few = profile_run(LLAMA3, resolve(vllm("v0", max_model_len=2048, max_num_seqs=32), LLAMA3, H100))
    assert few.sampler_bytes == 32 * 128256 * 50 + 2048 * 4096 * 2
    assert few.peak_bytes == few.forward_bytes == 2048 * (3 * 4096 + 3 * 14336) * 2


@pytest.mark.parametrize("max_len, logged_gib", [(20000, 17.06 - 14.9888), (29000, 17.98 - 14.9888)])
def test_v0_forward_reproduces_vllm_10517(max_len, logged_gib):
    """vllm#10517 (v0.6.4, RTX 3090, Llama-3.1-8B): peak_torch_memory less the weights, at 20k and 29k tokens."""
    run = profile_run(LLAMA31, resolve(vllm("v0.6.4", max_model_len=max_len), LLAMA31, RTX3090))
    assert run.forward_bytes == max_len * (3 * 4096 + 3 * 14336) * 2
    assert run.peak_bytes == run.forward_bytes
    assert run.peak_bytes == pytest.approx(logged_gib * GiB, rel=0.01)


@pytest.mark.parametrize("model, tp, logged_gib", [
    (LLAMA31, 1, 1.89), (LLAMA31, 4, 1.89), (load_model("qwen2.5-72b"), 2, 2.29),
    (load_model(DATA / "models" / "qwen3-30b-a3b.yaml"), 1, 2.68), (load_model("mixtral-8x7b"), 2, 1.21)])
def test_v1_activation_against_v019_logs(model, tp, logged_gib):
    """vLLM v0.19.0 H100 logs (llm-d-planner d3121e0): 'torch peak memory increase' at 8,192 tokens, 1,024 seqs."""
    peak = _activation(model, H100, vllm("v1", tensor_parallel=tp, max_model_len=8192))
    assert peak == pytest.approx(logged_gib * GiB, rel=0.08 if model.is_moe else ACTIVATION_REL)


# --- vLLM V1 by release: the sampler's sort before v0.17, the kept MoE workspaces from v0.14 -------------------------

QWEN3_30B = load_model("qwen3-30b-a3b")
H200 = load_gpu("h200-sxm")


def test_v1_before_v017_sorts_as_v0_by_hand():
    """Qwen3-30B-A3B (hidden 2,048, 128 experts of 768, top-8, vocabulary 151,936: its config.json) on an H200 under
    vLLM V1 v0.15.0: 8,192 tokens over 1,024 sequences (V1's defaults on a GPU of 70 GiB or more). v0.15.0's sampler
    sorts the whole vocabulary (vllm v0.15.0 vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p): bf16 logits
    2 + fp32 copy 4 + sorted values 4 + int64 indices 8 + the sort's buffers 8 + 12 = 38 bytes a logit,
        1,024 x 151,936 x 38 = 5,912,133,632  + the hidden states 8,192 x 2,048 x 2 = 33,554,432,
    beside the fused-MoE workspaces the modular kernel keeps from v0.14.0 (vllm v0.15.0 fused_moe/modular_kernel.py,
    vllm/v1/worker/workspace.py), rooflab's k (3 F + H) a token:
        8,192 x 8 x (3 x 768 + 2,048) x 2 = 570,425,344;  peak 6,516,113,408 B = 6.07 GiB.
    v0.19.0 (Triton top-k / top-p, 15 bytes) gives 1,024 x 151,936 x 15 + 33,554,432 + 570,425,344."""
    run = profile_run(QWEN3_30B, resolve(vllm("v1", max_model_len=16000, release="0.15.0"), QWEN3_30B, H200))
    assert (run.num_tokens, run.num_requests) == (8192, 1024)
    assert run.sampler_bytes == 5_912_133_632 + 33_554_432
    assert run.moe_workspace_bytes == 570_425_344 and run.moe_workspace_kept
    assert run.peak_bytes == 6_516_113_408
    new = profile_run(QWEN3_30B, resolve(vllm("v1", max_model_len=16000, release="0.19.0"), QWEN3_30B, H200))
    assert new.peak_bytes == 1024 * 151936 * 15 + 33_554_432 + 570_425_344


def test_v1_before_v014_frees_the_moe_caches():
    """Up to v0.13.x fused_experts_impl allocates its caches per call and frees them (vllm v0.10.0
    fused_moe/fused_moe.py): at v0.10.2 without FlashInfer the peak is the sorting sampler alone, 5,945,688,064 B."""
    settings = vllm("v1", max_model_len=6144, release=(0, 10, 2), flashinfer_installed=False)
    run = profile_run(QWEN3_30B, resolve(settings, QWEN3_30B, H100))
    assert not run.moe_workspace_kept
    assert run.peak_bytes == run.sampler_bytes == 1024 * 151936 * 38 + 8192 * 2048 * 2


def test_v1_flashinfer_sampler_by_hand():
    """V1 v0.9.1 - v0.11.0 sample with FlashInfer where it is installed (vllm v0.10.1.1 and v0.11.0
    vllm/v1/sample/ops/topk_topp_sampler.py; flashinfer-python 0.2.11 / 0.3.0 sampling.py
    top_k_top_p_sampling_from_logits: a masked fp32 copy and its fp32 softmax, no sort): Llama-3.1-8B (vocabulary
    128,256, hidden 4,096) on an H100 at V1's large-GPU defaults, 1,024 rows over 8,192 tokens, bf16:
        (2 logits + 4 fp32 copy + 4 masked + 4 probabilities) x 1,024 x 128,256 = 1,838,678,016
        + the hidden states 8,192 x 4,096 x 2 = 67,108,864:  1,905,786,880 B.
    Without FlashInfer (`pip install vllm`, no extra), on AMD (vLLM's ROCm platform takes the native path) and from
    v0.11.1 (opt-in) the sort's 38 bytes; before v0.9.1 vllm-v0.8's own 15."""
    hidden = 8192 * 4096 * 2

    def sampler(gpu=H100, **kw):
        kw.setdefault("max_model_len", 8192)
        version = kw.pop("version", "v1")
        return profile_run(LLAMA31, resolve(vllm(version, **kw), LLAMA31, gpu)).sampler_bytes

    assert sampler(release="0.10.1.1") == 1_905_786_880 == 1024 * 128256 * 14 + hidden
    assert sampler(release="0.9.1") == sampler(release="0.11.0") == 1_905_786_880
    assert sampler(release="0.10.1.1", flashinfer_installed=False) == 1024 * 128256 * 38 + hidden
    assert sampler(release="0.11.1") == 1024 * 128256 * 38 + hidden
    assert sampler(release="0.19.0") == sampler() == 1024 * 128256 * 15 + hidden
    assert sampler(load_gpu("mi300x"), release="0.10.1") == 1024 * 128256 * 38 + hidden
    assert sampler(version="v0.8", release="0.8.4") == 1024 * 128256 * 15 + 1024 * 4096 * 2


def test_v1_few_rows_sort_even_from_v017():
    """v0.17's Triton filter takes 8 rows or more; 4 rows sort whole, at 50 bytes a logit (module docstring)."""
    run = profile_run(LLAMA31, resolve(vllm("v1", max_model_len=8192, max_num_seqs=4, release="0.19.0"), LLAMA31, H100))
    assert run.sampler_bytes == 4 * 128256 * 50 + 8192 * 4096 * 2


@pytest.mark.parametrize("model", [LLAMA31, QWEN3_30B, load_model("mixtral-8x7b")])
@pytest.mark.parametrize("seqs", [4, 64, 256, 1024])
def test_v1_without_a_release_is_its_newest(model, seqs):
    """No release is the accounting's newest (v0.20), and before v0.17 the peak is never below v0.17's."""
    def peak(release):
        return profile_run(model, resolve(vllm("v1", max_model_len=8192, max_num_seqs=seqs, release=release), model,
                                          H100)).peak_bytes
    assert peak(None) == peak("0.20.1") == peak("0.17.0")
    assert peak("0.16.0") >= peak("0.17.0")


@pytest.mark.parametrize("version, release, words", [
    ("v1", "0.9.0", "outside vllm-v1's releases"), ("v1", "0.30.0", "outside vllm-v1's releases"),
    ("v1", "latest", "not an engine release"), ("v1", (0, -1), "must be a release"),
    ("v1", [0, 15], "must be a release"),
    ("v0", "0.11.0", "outside vllm-v0's releases (vLLM V0 v0.6.5 - v0.10.x)"),
    ("v0.8", "0.9.1", "outside vllm-v0.8's releases")])
def test_release_refused_naming_it(version, release, words):
    from rooflab.errors import InputError

    with pytest.raises(InputError, match="EngineSettings.release") as err:
        vllm(version, release=release)
    assert words in str(err.value)


def test_moe_caches_take_whole_experts_under_expert_parallelism():
    """Under EP vLLM's experts run with TP 1 (vllm v0.8.4 fused_moe/layer.py FusedMoE.__init__; v0.10.2
    fused_moe/config.py FusedMoEParallelConfig.make), so fused_moe's caches are k (3 F + H) a token, not F / TP.
    DeepSeek-R1 (config.json: hidden 7,168, moe_intermediate_size 2,048, top-8) at TP 16 + EP 16 under vLLM V1 v0.8,
    32,768 tokens (set 5's log's max_num_batched_tokens; one fused_moe chunk), bf16:
        8 x (3 x 2,048 + 7,168) x 32,768 x 2 = 6,979,321,856  + the residual stream 32,768 x 3 x 7,168 x 2
        = 1,409,286,144:  8,388,608,000 B, above the sampler (256 x 129,280 x 15 + 256 x 7,168 x 2);
    without EP F / 16 = 128: 8 x (384 + 7,168) x 32,768 x 2 + 1,409,286,144 = 5,368,709,120 B."""
    model = load_model("deepseek-v3")
    common = dict(tensor_parallel=16, max_num_batched_tokens=32768, max_num_seqs=256, max_model_len=32768)
    ep = profile_run(model, resolve(vllm("v0.8", expert_parallel=16, **common), model, H100))
    assert ep.forward_bytes == ep.peak_bytes == 8_388_608_000
    assert ep.sampler_bytes == 256 * 129280 * 15 + 256 * 7168 * 2
    assert profile_run(model, resolve(vllm("v0.8", **common), model, H100)).forward_bytes == 5_368_709_120


@pytest.mark.parametrize("release, installed, opted_in, expected", [
    ((0, 10, 2), True, None, 14),     # unset: FlashInfer where it imports (0.10.0 topk_topp_sampler.py:40)
    ((0, 10, 2), True, False, 38),    # VLLM_USE_FLASHINFER_SAMPLER=0: the native sort
    ((0, 10, 2), False, None, 38),    # not installed ('FlashInfer is not available')
    ((0, 11, 2), True, None, 38),     # opt-in from v0.11.1 (0.11.2 topk_topp_sampler.py:34)
    ((0, 11, 2), True, True, 14),     # opted in
    ((0, 11, 2), False, True, 38),    # opted in, not installed
    ((0, 19, 0), True, True, 15),     # from v0.17 the Triton top-k / top-p stays (not read with it set)
])
def test_vllm_use_flashinfer_sampler(release, installed, opted_in, expected):
    from rooflab.engines.profile import sampler_bytes_per_logit
    from rooflab.engines.vocab import Accounting

    assert sampler_bytes_per_logit(Accounting.vllm_v1, release, 288, installed, opted_in) == expected


@pytest.mark.parametrize("release, opted_in, mode, expected", [
    ("0.10.2", None, "processed_logprobs", 38),    # FlashInfer installed, the default path: the sort kept
    ("0.10.2", None, "processed_logits", 38),
    ("0.10.2", None, "raw_logits", 14),            # a raw mode takes FlashInfer as before
    ("0.11.0", None, "processed_logprobs", 38),
    ("0.11.2", True, "processed_logprobs", 38),    # opted in (VLLM_USE_FLASHINFER_SAMPLER=1): still the sort
    ("0.11.2", True, "raw_logprobs", 14),
    ("0.10.1.1", None, "processed_logprobs", 14),  # v0.10.1.1's TopKTopPSampler takes no mode
])
def test_a_processed_logprobs_mode_keeps_the_native_sampler(release, opted_in, mode, expected):
    """vllm v0.10.2 vllm/v1/sample/ops/topk_topp_sampler.py:39-41 (v0.11.0 :37-38, v0.11.2 :30-33): a processed
    --logprobs-mode takes forward_native, the sort, whatever FlashInfer and VLLM_USE_FLASHINFER_SAMPLER say.
    Llama-3.1-8B on an H100 at V1's large-GPU defaults: 1,024 rows x 128,256 x the bytes a logit + the hidden
    states 8,192 x 4,096 x 2."""
    settings = vllm("v1", max_model_len=8192, release=release, use_flashinfer_sampler=opted_in, logprobs_mode=mode)
    run = profile_run(LLAMA31, resolve(settings, LLAMA31, H100))
    assert run.sampler_bytes == 1024 * 128256 * expected + 8192 * 4096 * 2


def test_nemo_rls_gemma_3_log_samples_with_the_sort_whatever_its_environment():
    """Set 8's NeMo RL log (vLLM v0.11.2, 'logprobs_mode': 'processed_logprobs' in its non-default args, the
    environment redacted): with or without VLLM_USE_FLASHINFER_SAMPLER=1 its profile sorts, 1,024 x 262,208 x 38
    bytes beside the hidden states 16,384 x 5,376 x 2."""
    gemma, b200 = load_model("gemma-3-27b"), load_gpu("b200")
    opts = dict(release="0.11.2", max_model_len=32768, max_num_batched_tokens=16384,
                logprobs_mode="processed_logprobs")
    runs = {opted: profile_run(gemma, resolve(vllm("v1", use_flashinfer_sampler=opted, **opts), gemma, b200))
            for opted in (None, True)}
    assert runs[None].sampler_bytes == runs[True].sampler_bytes == 1024 * 262208 * 38 + 16384 * 5376 * 2


def test_opting_in_at_0_11_2_by_hand():
    """Llama-3.2-1B (vocabulary 128,256) at 288 sequences: the sort's 38 bytes a logit against FlashInfer's 14,
    288 x 128,256 x 24 = 886,505,472 bytes less activation peak with VLLM_USE_FLASHINFER_SAMPLER=1."""
    from rooflab.engines import engine_capacity

    model, l4 = load_model("llama-3.2-1b"), load_gpu("l4")
    opts = dict(release="0.11.2", max_model_len=2048, max_num_seqs=288, max_num_batched_tokens=2048)
    unset = engine_capacity(model, l4, vllm(**opts)).term("activation_peak").bytes
    opted = engine_capacity(model, l4, vllm(use_flashinfer_sampler=True, **opts)).term("activation_peak").bytes
    assert unset - opted == 288 * 128_256 * 24 == 886_505_472


# --- vLLM V1's multimodal profile: the dummy encoder outputs held in the encoder cache -------------------------------

GEMMA3_27B = load_model("gemma-3-27b")
B200 = load_gpu("b200")


def _gemma3_run(release, **kw):
    settings = vllm("v1", max_model_len=32768, max_num_batched_tokens=16384, release=release, **kw)
    return profile_run(GEMMA3_27B, resolve(settings, GEMMA3_27B, B200))


def test_v0_11_expands_each_dummy_image_to_the_encoder_budget_by_hand():
    """Gemma 3 27B (google/gemma-3-27b-it: text width 5,376, an image 256 + 4 prompt tokens, bf16) under vLLM
    v0.11.2 at 16,384 batched tokens (profile.py's docstring cites each step):
        budget B = max(16,384, 260) = 16,384;  items N = max(1, min(16,384 // 260, 1,024 x min(999, 32,768 // 260)))
        = 63 (held-out set 8's v0.11.2 log prints "profiled with 63 image items");
        v0.11.2 copies each output into zeros of (B, 5,376): 63 x 16,384 x 5,376 x 2 = 11,098,128,384 B (10.34 GiB),
        beside the 63 dummy 3 x 896 x 896 bf16 pixel arrays: 63 x 2,408,448 x 2 = 303,464,448 B,
    held beside the sampler, so the peak is both plus the text-only peak."""
    run = _gemma3_run("0.11.2")
    enc = run.encoder_cache
    assert (enc.items, enc.rows) == (63, 16384)
    assert enc.output_bytes == 63 * 16384 * 5376 * 2 == 11_098_128_384
    assert enc.input_bytes == 63 * 3 * 896 * 896 * 2 == 303_464_448
    text = profile_run(GEMMA3_27B, resolve(vllm("v1", max_model_len=32768, max_num_batched_tokens=16384,
                                                 release="0.11.2", limit_mm_per_prompt=0), GEMMA3_27B, B200))
    assert text.encoder_cache is None
    assert run.peak_bytes == text.peak_bytes + 11_098_128_384 + 303_464_448
    assert "63 dummy image outputs of 16,384 rows" in run.describe()
    assert _gemma3_run("0.11.0").encoder_cache.rows == 16384


@pytest.mark.parametrize("release", ["0.10.2", "0.12.0", "0.19.0"])
def test_no_expansion_before_v0_11_or_from_v0_12(release):
    """v0.10.2 keeps the encoder's outputs as they are, v0.12.0 pads them to one image's tokens (vllm v0.10.2
    gpu_model_runner.py :3026; v0.12.0 :4331-4354): 63 x 260 x 5,376 x 2 = 176,117,760 B, no budget-wide copy;
    the dummy inputs as at v0.11.2."""
    enc = _gemma3_run(release).encoder_cache
    assert (enc.items, enc.rows, enc.output_bytes) == (63, 260, 63 * 260 * 5376 * 2)
    assert enc.input_bytes == 303_464_448


def test_encoder_cache_items_follow_the_image_limit_and_the_sequences():
    """N = max(1, min(B // t, max_num_seqs x max(1, min(L, max_model_len // t)))): 4 sequences of 2 images (L 2)
    bind at 8 items; 4 sequences of a 1,024-token context (3 images a prompt at most) at 12."""
    assert _gemma3_run("0.11.2", max_num_seqs=4, limit_mm_per_prompt=2).encoder_cache.items == 8
    short = vllm("v1", max_model_len=1024, max_num_batched_tokens=16384, max_num_seqs=4, release="0.11.2")
    assert profile_run(GEMMA3_27B, resolve(short, GEMMA3_27B, B200)).encoder_cache.items == 12


def test_no_encoder_cache_for_a_text_only_model_or_launch():
    """A model with no image input (image_tokens 0), a --limit-mm-per-prompt of 0 images ("running in text-only
    mode"), --skip-mm-profiling, and the V0 accounting run no multimodal profile here."""
    llama = profile_run(LLAMA3, resolve(vllm("v1", release="0.11.2"), LLAMA3, H100))
    assert llama.encoder_cache is None
    assert _gemma3_run("0.11.2", limit_mm_per_prompt=0).encoder_cache is None
    assert _gemma3_run("0.11.2", skip_mm_profiling=True).encoder_cache is None
    v0 = profile_run(GEMMA3_27B, resolve(vllm("v0", max_model_len=32768), GEMMA3_27B, B200))
    assert v0.encoder_cache is None


def test_the_multimodal_options_are_vllms_and_checked():
    from rooflab.errors import InputError

    from support import sglang

    with pytest.raises(InputError, match="--limit-mm-per-prompt"):
        vllm("v1", limit_mm_per_prompt=-1)
    with pytest.raises(InputError, match="--skip-mm-profiling"):
        vllm("v1", skip_mm_profiling="yes")
    with pytest.raises(InputError, match="--limit-mm-per-prompt is vLLM's"):
        sglang("v0.5", limit_mm_per_prompt=0)


@pytest.mark.parametrize("release, installed, opted_in, words", [
    ("0.11.0", True, None, "FlashInfer assumed installed"),    # the install decides: the assumption named
    ("0.11.0", False, None, "PyTorch's sort of the vocabulary (38 bytes"),
    ("0.11.2", True, True, "FlashInfer assumed installed"),    # VLLM_USE_FLASHINFER_SAMPLER=1 from v0.11.1
    ("0.11.2", True, None, ""),                                # v0.11.1 - v0.16: the sort unless opted in
    ("0.10.0", True, False, ""),                               # opted out: the release decides alone
    ("0.19.0", True, None, ""),                                # the Triton top-k / top-p: no install question
])
def test_the_sampler_pass_names_the_flashinfer_assumption(release, installed, opted_in, words):
    """Held-out set 10's T4 log (vllm 0.11.0, 'FlashInfer is not available', a pip install) missed by +7.84% under the
    default FlashInfer assumption and lands at -0.26% with --no-flashinfer (post hoc): the term's words say which
    sampler the pass assumes wherever the install decides it (vllm 0.11.0 v1/sample/ops/topk_topp_sampler.py:17-21,
    39-69: FlashInfer's kernels where `import flashinfer.sampling` succeeds)."""
    settings = vllm("v1", max_model_len=8192, release=release, flashinfer_installed=installed,
                    use_flashinfer_sampler=opted_in)
    run = profile_run(LLAMA31, resolve(settings, LLAMA31, H100))
    text = run.describe()
    assert text.startswith("modelled: the sampler pass")
    if words:
        assert words in text
    else:
        assert "FlashInfer" not in text and "sort" not in text
