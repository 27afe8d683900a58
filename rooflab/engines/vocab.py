"""The engines' own vocabulary: which engine and which of its memory accountings, KV-cache dtype names.

    Engine          rooflab.vocab.Engine, of which the accounting follows vllm and sglang (ACCOUNTING_ENGINES)
    Accounting      one engine's way of sizing its KV cache over a range of its releases (vllm-v1,
                    sglang-v0.4, ...): the user picks one with --engine-version
    KvCacheDtype    what --kv-cache-dtype names (auto, fp8 = fp8_e4m3, fp8_e5m2, fp8_ds_mla, bfloat16, ...)
    MambaCacheMode  vLLM's --mamba-cache-mode: how many state pages a request of a hybrid model holds

Every name is refused with a one-line error naming the value and listing the accepted ones.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import InputError, shown
from ..limits import MAX_TOKENS
from ..units import DTYPE_ALIASES, DType
from ..vocab import _ENGINE_ALIASES, Engine


#: The engines whose capacity accounting rooflab follows: a subset of the one engine vocabulary (rooflab.vocab.Engine,
#: imported here so that `rooflab.engines.vocab.Engine is rooflab.vocab.Engine`). TensorRT-LLM's scheduler and step
#: kernels are modelled, its KV-cache sizing is not: parse_engine refuses it for capacity.
ACCOUNTING_ENGINES = (Engine.vllm, Engine.sglang)


class Accounting(str, enum.Enum):
    """One engine's KV-cache sizing over a range of its releases (values as `--engine-version` takes them).

    vllm-v0.2     V0, v0.2.5 - v0.6.3 (PR #2031): KV = u T - (all memory in use after the profile run; from v0.3.1
                  what came into use since the worker started: RELEASE_RANGE)
    vllm-v0.6.4   V0, v0.6.4 (PR #9352): KV = u T - (torch peak, weights included, + non-torch memory)
    vllm-v0       V0, v0.6.5 to its removal after v0.10.x (PRs #10511, #12126): KV = u T - (weights + activation
                  peak + non-torch)
    vllm-v0.8     V1, v0.8.0 - v0.9.0.1: KV = u T - (torch's allocated peak, weights included, + all memory in
                  use outside torch after the profile: the CUDA context and other processes' too), V1's profile run
    vllm-v1       V1, v0.9.1 - v0.29 (PR #19312): the same three terms, V1's profile run, defaults and log lines;
                  linear-attention (Qwen3-Next) models from v0.10.2
    sglang-v0.4   SGLang v0.1.17 - v0.4.x: pool = f x free memory after NCCL init - weights, f by TP size and release
    sglang-v0.5   SGLang v0.5.3 - v0.5.10: the same pool, f from a reserve that grows with the GPU's defaults
    """

    vllm_v0_2 = "vllm-v0.2"
    vllm_v0_6_4 = "vllm-v0.6.4"
    vllm_v0 = "vllm-v0"
    vllm_v0_8 = "vllm-v0.8"
    vllm_v1 = "vllm-v1"
    sglang_v0_4 = "sglang-v0.4"
    sglang_v0_5 = "sglang-v0.5"

    def __str__(self) -> str:
        return self.value

    @property
    def engine(self) -> Engine:
        return Engine(self.value.split("-")[0])

    @property
    def short(self) -> str:
        """The name after the engine's: 'v1', 'v0.6.4'."""
        return self.value.split("-", 1)[1]

    @property
    def is_v1(self) -> bool:
        """vLLM's V1 engine (its profile run, defaults, block pool and log lines), either accounting of it."""
        return self in (Accounting.vllm_v0_8, Accounting.vllm_v1)

    @property
    def generation(self) -> str:
        """vLLM's engine the accounting follows, 'V0' or 'V1'; '' for SGLang's."""
        return ("V1" if self.is_v1 else "V0") if self.engine is Engine.vllm else ""

    @property
    def releases(self) -> str:
        """'vLLM V1 v0.9.1 - v0.29.x', 'SGLang v0.5.3 - v0.5.10': the engine, its generation and RELEASE_RANGE's
        releases (span_text), built from the table."""
        return " ".join(w for w in (self.engine.title, self.generation, span_text(RELEASE_RANGE[self])) if w)

#: The releases (first, last; a last of fewer numbers covers every release it begins, (0, 20) all of v0.20.x) each
#: accounting follows, the one table EngineSettings.release is held to and a numeric --engine-version is read by:
#:   vllm-v0.2     v0.2.5 - v0.6.3: KV = u T - peak, peak = (T - free) after the profile run up to v0.3.0 (v0.2.5 and
#:                 v0.3.0 vllm/worker/worker.py profile_num_available_blocks), (free at the worker's start - free)
#:                 from v0.3.1 to v0.6.3 (v0.3.1, v0.4.0, v0.5.0, v0.6.3 worker.py determine_num_available_blocks;
#:                 init_gpu_memory read after the CUDA context starts, before NCCL): v0.3.1+'s baseline leaves the
#:                 CUDA context and other processes' memory out, which the accounting still charges (not modelled)
#:   vllm-v0.6.4   v0.6.4 (and its .post1), PR #9352
#:   vllm-v0       v0.6.5 - v0.10.x: V0, the default up to v0.7.x, VLLM_USE_V1=0 (or V1's fallback) from v0.8.0;
#:                 v0.10.2 is the last wheel with vllm/worker/worker.py (v0.11.0's vllm/engine/llm_engine.py is V1's)
#:   vllm-v0.8     v0.8.0 - v0.9.0.1: V1, the default from v0.8.0 (vllm/envs.py VLLM_USE_V1 "1")
#:   vllm-v1       v0.9.1 - v0.29.x (PR #19312; read in the v0.20.0 - v0.29.0 wheels: from v0.20.0 the default
#:                 utilisation is 0.92 and the profile's CUDA-graph estimate is subtracted, vllm.py and
#:                 cudagraph.py, where a release is given)
#:   sglang-v0.4   v0.1.17 - v0.5.2: v0.5.1 and v0.5.2 keep v0.4.8 - v0.4.10's reserve (sglang v0.5.1
#:                 server_args.py:366-393, v0.5.2 :464-496), as sglang.py models that release range
#:   sglang-v0.5   v0.5.3 - v0.5.10 (sglang v0.5.3 server_args.py _handle_gpu_memory_settings, v0.5.10)
#: Where the engine's terms differ inside a range (profile.py: vLLM V1's sampler and fused-MoE workspaces;
#: sglang.py: mem_fraction_static by release) they follow EngineSettings.release.
RELEASE_RANGE = {
    Accounting.vllm_v0_2: ((0, 2, 5), (0, 6, 3)), Accounting.vllm_v0_6_4: ((0, 6, 4), (0, 6, 4)),
    Accounting.vllm_v0: ((0, 6, 5), (0, 10)), Accounting.vllm_v0_8: ((0, 8, 0), (0, 9, 0, 1)),
    Accounting.vllm_v1: ((0, 9, 1), (0, 29)),
    Accounting.sglang_v0_4: ((0, 1, 17), (0, 5, 2)), Accounting.sglang_v0_5: ((0, 5, 3), (0, 5, 10)),
}

#: The accounting `--engine E` follows when no --engine-version is given: each engine's newest modelled one.
DEFAULT_ACCOUNTING = {Engine.vllm: Accounting.vllm_v1, Engine.sglang: Accounting.sglang_v0_5}
#: Where a number of a release stands for every release of its series (label_release: v0 is v0.10.x's newest).
SERIES_NEWEST = 10 ** 6
#: The labels that stand for a release before their accounting's newest (label_release), so that a label keeps the
#: figures it has always had: vllm-v1's v0.19.x, the newest release before V1's v0.20.0 defaults (the 0.92
#: utilisation, the CUDA-graph estimate: vllm.py, for a release given); sglang-v0.4's v0.4.5, the last release of the
#: v0.4.0 mem_fraction_static table the label has always priced (v0.4.6 changes it on GPUs above 80 GiB, v0.4.8
#: replaces it with a reserve; sglang.py), its weights at v0.4.5 too (fp8 MLA copies, DP attention's v0.4.5 layout).
_LABEL_RELEASES = {Accounting.vllm_v1: (0, 19, SERIES_NEWEST), Accounting.sglang_v0_4: (0, 4, 5)}


def label_release(accounting: Accounting) -> tuple[int, ...]:
    """The one release an accounting's label (--engine-version v1, v0.4; EngineSettings.release None) stands for:
    every release-dependent term of a label is computed at it (settings.resolve). The accounting's newest
    (RELEASE_RANGE's last; a last of fewer numbers padded with SERIES_NEWEST: all of its series), except the
    labels of _LABEL_RELEASES."""
    return _LABEL_RELEASES.get(accounting, span_newest(RELEASE_RANGE[accounting]))


def in_span(release: tuple[int, ...], span: tuple[tuple[int, ...], tuple[int, ...]]) -> bool:
    """Whether `release` (numbers, (0, 10, 1)) lies in `span` (first, last): first <= release, and the release's
    first numbers, as many as last has, <= last (a last of fewer numbers covers every release it begins: (0, 29)
    all of v0.29.x). The one range check: RELEASE_RANGE's (in_range) and every span a term is read over
    (engines.memory's absorbed MLA copies, engines.profile's FlashInfer sampler)."""
    first, last = span
    release = tuple(release)
    return tuple(first) <= release and release[:len(last)] <= tuple(last)


def in_range(accounting: Accounting, release: tuple[int, ...]) -> bool:
    """Whether `release` (numbers, (0, 10, 1)) is one of `accounting`'s (RELEASE_RANGE, in_span)."""
    return in_span(release, RELEASE_RANGE[accounting])


def span_newest(span: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[int, ...]:
    """The newest release of `span` (first, last): its last, a last of fewer than three numbers padded with
    SERIES_NEWEST (all of its series: (0, 29) is (0, 29, SERIES_NEWEST), release_text's v0.29.x)."""
    last = tuple(span[1])
    return last + (SERIES_NEWEST,) * (3 - len(last))


def span_text(span: tuple[tuple[int, ...], tuple[int, ...]]) -> str:
    """`span` (first, last) as text: 'v0.2.5 - v0.6.3', 'v0.9.1 - v0.29.x' (a last of fewer numbers: its whole
    series), one release alone ('v0.6.4'). The releases' text everywhere (Accounting.releases, help, errors) is
    built with it from the span, not written beside it."""
    first, newest = release_text(tuple(span[0])), release_text(span_newest(span))
    return first if first == newest else f"{first} - {newest}"


def generations_text(engine: Engine = Engine.vllm) -> str:
    """'V0 to v0.10.x, V1 from v0.8.0': the releases each of `engine`'s generations covers (RELEASE_RANGE), for
    --vllm-use-v1's help and errors."""
    parts = []
    for generation, v1 in (("V0", False), ("V1", True)):
        spans = [RELEASE_RANGE[a] for a in Accounting if a.engine is engine and a.is_v1 is v1]
        if spans:
            parts.append(f"{generation} to {release_text(max(map(span_newest, spans)))}" if not v1 else
                         f"{generation} from {release_text(min(tuple(s[0]) for s in spans))}")
    return ", ".join(parts)


def labels_text(engine: Engine) -> str:
    """'v0.4 (v0.1.17 - v0.5.2), v0.5 (default, v0.5.3 - v0.5.10)': `engine`'s accounting labels with the releases
    each covers (RELEASE_RANGE; vLLM's with its generation), for --engine-version's help."""
    return ", ".join(
        f"{a.short} ({'default, ' if a is DEFAULT_ACCOUNTING[engine] else ''}"
        f"{' '.join(w for w in (a.generation, span_text(RELEASE_RANGE[a])) if w)})"
        for a in Accounting if a.engine is engine)


def accounting_of(engine: Engine, release: tuple[int, ...], v1: bool) -> "Accounting | None":
    """The accounting of `engine`'s V1 (`v1`) or V0 engine that covers `release` (RELEASE_RANGE), None if none."""
    return next((a for a in Accounting if a.engine is engine and a.is_v1 is v1 and in_range(a, release)), None)


def release_text(release: tuple[int, ...]) -> str:
    """'v0.10.1'; a number that stands for its whole series (SERIES_NEWEST) as x: 'v0.20.x'."""
    return "v" + ".".join("x" if n >= SERIES_NEWEST else str(n) for n in release)


def parse_engine(text: str) -> Engine:
    """--engine for capacity: 'vllm' or 'sglang' (any case), or one of those Engines. TensorRT-LLM (any spelling
    rooflab.vocab.Engine.of takes) is refused by name: its KV-cache accounting is not modelled."""
    if isinstance(text, Engine):
        engine = text
    else:
        key = text.strip().lower() if isinstance(text, str) else None
        key = _ENGINE_ALIASES.get(key, key)
        if key not in Engine._value2member_map_:
            raise InputError(f"--engine {shown(text)} is not an engine rooflab models; choose vllm or sglang")
        engine = Engine(key)
    if engine not in ACCOUNTING_ENGINES:
        raise InputError(f"--engine {shown(engine.value if isinstance(text, Engine) else text)}: rooflab models "
                         f"{engine.title}'s scheduler and step kernels (rooflab step / serve --engine), not its "
                         "KV-cache accounting; capacity follows vllm or sglang, or rooflab's own bound without "
                         "--engine")
    return engine


@dataclass(frozen=True)
class EngineVersion:
    """What --engine-version names: the accounting, and the release where a number was given (None: a label,
    which stands for one release, label_release: the accounting's newest but vllm-v1's v0.19.x and sglang-v0.4's
    v0.4.5)."""

    accounting: Accounting
    release: tuple[int, ...] | None = None


#: --engine-version's two forms, for help text and errors (the labels from Accounting).
ENGINE_VERSION_FORMS = ("a release as the engine prints it (vLLM 0.10.1, v0.8.4, 0.6.3.post1; SGLang 0.4.6.post2), "
                        "or an accounting's label ("
                        + "; ".join(f"{e.title} {', '.join(a.short for a in Accounting if a.engine is e)}"
                                    for e in ACCOUNTING_ENGINES) + ")")


def parse_engine_version(engine: Engine, text: str | None, use_v1: bool | None = None,
                         engine_from: str = "--engine") -> EngineVersion:
    """`--engine-version` for `engine`, in either form (ENGINE_VERSION_FORMS); None gives the engine's default.

    A label ('v1', 'v0.6.4', 'vllm-v1', '0.8') names an accounting, release None (label_release's). A release
    ('0.10.1', 'v0.8.4' or 'V0.8.4', '0.6.3.post1': rooflab.vocab.release_of's forms) picks the accounting whose
    RELEASE_RANGE holds it, V1's where vLLM's V0 and V1 both do (V1 the default from v0.8.0; V0 after that is
    `--engine-version v0`, VLLM_USE_V1=0), and keeps the release. A label of the other engine is a contradiction,
    and a release no accounting holds is refused naming the ranges. `use_v1` is vLLM's VLLM_USE_V1 (None: unset):
    with a release, False picks V0 where that release ships it (to v0.10.x), True V1 (from v0.8.0); with a
    label it must agree with the label's engine; without a version, False is V0's label (v0). VLLM_USE_V1's own
    0 and 1 are False and True; anything else is an InputError naming use_v1. `engine_from` says where the
    engine came from, for the errors ('--engine', 'the log').
    """
    engine = parse_engine(engine)
    use_v1 = _use_v1(use_v1)
    version = _engine_version(engine, text, engine_from)
    if use_v1 is None:
        return version
    if engine is not Engine.vllm:
        raise InputError("--vllm-use-v1 is vLLM's (VLLM_USE_V1: its V0 or V1 engine); SGLang has no such setting")
    if version.accounting.is_v1 is use_v1:
        return version
    if text is None and not use_v1:
        return EngineVersion(Accounting.vllm_v0)      # V0's newest, as --engine-version v0
    if version.release is None:
        raise InputError(f"--vllm-use-v1 {int(use_v1)} contradicts --engine-version {text} "
                         f"({version.accounting.releases}); give a release (0.8.4) or the other engine's label")
    other = accounting_of(engine, version.release, use_v1)
    if other is None:
        raise InputError(f"--vllm-use-v1 {int(use_v1)}: vLLM {release_text(version.release)} has no "
                         f"{'V1' if use_v1 else 'V0'} engine rooflab models ({generations_text()})")
    return EngineVersion(other, version.release)


def _use_v1(value) -> bool | None:
    """parse_engine_version's use_v1: None, a bool, or VLLM_USE_V1's 0 / 1 (as bools); else an InputError."""
    if value is None or isinstance(value, bool):
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    raise InputError(f"use_v1 (--vllm-use-v1) must be True / False or VLLM_USE_V1's 1 / 0 (None: unset), got "
                     f"{shown(value)}")


def _engine_version(engine: Engine, text: str | None, engine_from: str = "--engine") -> EngineVersion:
    """parse_engine_version without VLLM_USE_V1."""
    if text is None:
        return EngineVersion(DEFAULT_ACCOUNTING[engine])
    if not isinstance(text, str) or len(text) > 64:
        raise InputError(f"--engine-version must be {ENGINE_VERSION_FORMS}, got {shown(text)}")
    label = _accounting_label(engine, text, engine_from)
    if label is not None:
        return EngineVersion(label)
    from ..vocab import _release_match, release_of

    try:
        release = release_of(text, "--engine-version", engine)
    except InputError:
        if _release_match(text) is not None:    # a release in form, refused on its own ('0.10.99999')
            raise
        own = ", ".join(a.short for a in Accounting if a.engine is engine)
        raise InputError(f"--engine-version {shown(text)} is neither a {engine.title} release (such as "
                         f"{'0.10.1, 0.6.3.post1' if engine is Engine.vllm else '0.4.6.post2, 0.5.3'}) nor one of "
                         f"its accountings ({own})") from None
    if release is None:                     # vLLM's generation 'v1 (0.11+)' (ENGINE_RELEASES; refused for SGLang)
        return EngineVersion(Accounting.vllm_v1)
    holding = [a for a in Accounting if a.engine is engine and in_range(a, release)]
    if not holding:
        ranges = "; ".join(f"{a.short}: {a.releases}" for a in Accounting if a.engine is engine)
        raise InputError(f"--engine-version {shown(text)}: no {engine.title} accounting rooflab models covers "
                         f"{release_text(release)} ({ranges})")
    return EngineVersion(next((a for a in holding if a.is_v1), holding[0]), release)


def _accounting_label(engine: Engine, text: str, engine_from: str = "--engine") -> Accounting | None:
    """The accounting a label names ('v1', '0.6.4', 'vllm-v1'), None where `text` is no label; a label of the
    other engine is an InputError."""
    key = text.strip().lower()
    key = key if key.startswith(("vllm-", "sglang-")) else f"{engine.value}-{key if key.startswith('v') else 'v' + key}"
    if key not in Accounting._value2member_map_:
        if key.startswith(f"{engine.value}-"):
            return None
        raise InputError(f"--engine-version {shown(text)} is not a {engine.title} accounting rooflab models; "
                         f"choose one of {', '.join(a.short for a in Accounting if a.engine is engine)}")
    accounting = Accounting(key)
    if accounting.engine is not engine:
        raise InputError(f"--engine-version {shown(text)} is {accounting.engine.title}'s, but {engine_from} is "
                         f"{engine.value}")
    return accounting


def parse_accounting(engine: Engine, text: str | None) -> Accounting:
    """The accounting `--engine-version` names for `engine` (parse_engine_version, without the release)."""
    return parse_engine_version(engine, text).accounting


@dataclass(frozen=True)
class KvCacheDtype:
    """What an engine's --kv-cache-dtype names: a dtype (None for 'auto', the model's own) and the layout."""

    name: str
    dtype: DType | None
    mla_sparse_fp8: bool = False

    def resolve(self, model_dtype: DType) -> DType:
        return self.dtype or model_dtype


#: --kv-cache-dtype names beyond the one dtype vocabulary (units.DType.of: fp8 = fp8_e4m3 in both engines, vLLM's
#: vllm/config/cache.py CacheDType): auto (the model's dtype), fp8_inc (Intel Gaudi's e4m3) and fp8_ds_mla
#: (DeepSeek-V3.2's 656-byte sparse MLA layout: e4m3 latent, fp32 scales, bf16 rope).
_KV_SPECIAL = {"auto": None, "fp8_inc": DType.fp8_e4m3, "fp8_ds_mla": DType.fp8_e4m3}
#: SGLang's --kv-cache-dtype choices (python/sglang/srt/server_args.py, add_cli_args, main at commit 469c63e):
#: auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1. It refuses 'fp8', 'float16' and 'fp16'.
SGLANG_KV_CACHE_DTYPES = ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16")
#: vLLM's --kv-cache-dtype choices by release: (the first release, the names it and the releases after it up to the
#: next row take), read in the wheels (argparse choices in vllm/engine/arg_utils.py; from v0.8.5 the CacheDType
#: Literal, vllm/config.py, from v0.10.1 vllm/config/cache.py):
#:   before v0.3.0  no --kv-cache-dtype (v0.2.5 arg_utils.py has none): the model's own dtype
#:   v0.3.0         auto, fp8_e5m2 (v0.3.0 arg_utils.py:129, v0.4.0 :156)
#:   v0.4.1         auto, fp8 (v0.4.1 :178, v0.4.2 :189; fp8 there is e5m2 on CUDA, e4m3 on ROCm, :191-194: one byte
#:                  either way)
#:   v0.4.3         auto, fp8, fp8_e5m2, fp8_e4m3 (v0.4.3 :195, v0.7.3 :359-361, v0.8.0 :369; v0.9.2 config.py:1477)
#:   v0.10.0        and fp8_inc (v0.10.0 config.py:1609; v0.10.2 config/cache.py:25)
#:   v0.11.0        and bfloat16 (v0.11.0 config/cache.py:25-26)
#:   v0.11.1        and fp8_ds_mla (v0.11.1 config/cache.py:24-32; v0.11.0 takes no such name, and turns auto or an
#:                  fp8 into it itself for DeepSeek-V3.2: vllm/model_executor/models/config.py:416-421)
#:   v0.18.0        and float16 (v0.18.0 config/cache.py:14-23; v0.17.1 :23-31 has none; v0.20.0's turboquant_*
#:                  names are not modelled)
#: rooflab's other names (bf16, fp16, float32, ...) are no release's.
_FP8S = ("fp8", "fp8_e5m2", "fp8_e4m3")
VLLM_KV_CACHE_DTYPES = (
    ((0, 0), ()),
    ((0, 3, 0), ("auto", "fp8_e5m2")),
    ((0, 4, 1), ("auto", "fp8")),
    ((0, 4, 3), ("auto", *_FP8S)),
    ((0, 10, 0), ("auto", *_FP8S, "fp8_inc")),
    ((0, 11, 0), ("auto", "bfloat16", *_FP8S, "fp8_inc")),
    ((0, 11, 1), ("auto", "bfloat16", *_FP8S, "fp8_inc", "fp8_ds_mla")),
    ((0, 18, 0), ("auto", "float16", "bfloat16", *_FP8S, "fp8_inc", "fp8_ds_mla")),
)


def vllm_kv_cache_dtypes(release: tuple[int, ...]) -> tuple[str, ...]:
    """The --kv-cache-dtype names vLLM `release` (numbers, (0, 7, 3)) takes (VLLM_KV_CACHE_DTYPES; () before
    v0.3.0, which has no such option)."""
    return [names for first, names in VLLM_KV_CACHE_DTYPES if tuple(first) <= tuple(release)][-1]


def _check_vllm_release(key: str, text: str, release: tuple[int, ...], where: str) -> None:
    """Refuse a --kv-cache-dtype name vLLM `release` does not take, naming the release, its names and the first
    release that takes the name (VLLM_KV_CACHE_DTYPES)."""
    names = vllm_kv_cache_dtypes(release)
    if key in names:
        return
    at = f"vLLM {release_text(release)}"
    if not names:
        raise InputError(f"{where} {shown(text)}: {at} has no --kv-cache-dtype (it came in v0.3.0); leave it out")
    since = next((first for first, taken in VLLM_KV_CACHE_DTYPES if first > tuple(release) and key in taken), None)
    raise InputError(f"{where} {shown(text)} is not one {at} takes (its choices: {', '.join(names)})"
                     + (f"; vLLM takes it from {release_text(since)}" if since else ""))


def parse_kv_cache_dtype(text: str, engine: "Engine | None" = None, where: str = "--kv-cache-dtype",
                         release: "tuple[int, ...] | None" = None) -> KvCacheDtype:
    """An engine's or rooflab's KV-cache dtype name (units.DType.of's vocabulary, auto, fp8_inc, fp8_ds_mla);
    for `engine` SGLang only the names SGLang takes, for vLLM at `release` (its numbers; None: no release known)
    only the names that release takes (VLLM_KV_CACHE_DTYPES). Anything else is an error naming `where` (the
    option, or a log's line that states the value) and listing the names accepted."""
    if not isinstance(text, str):
        raise InputError(f"{where} must be a name ('auto', 'fp8'), got {shown(text)}")
    key = text.strip().lower()
    if engine is Engine.sglang and key not in SGLANG_KV_CACHE_DTYPES:
        raise InputError(f"{where} {shown(text)} is not one SGLang takes (server_args.py choices: "
                         f"{', '.join(SGLANG_KV_CACHE_DTYPES)}; fp4_e2m1 is not modelled)"
                         + ("; SGLang spells vLLM's fp8 as fp8_e4m3" if key == "fp8" else ""))
    if engine is Engine.vllm and release is not None:
        _check_vllm_release(key, text, release, where)
    if key in _KV_SPECIAL:
        return KvCacheDtype(key, _KV_SPECIAL[key], mla_sparse_fp8=key == "fp8_ds_mla")
    try:
        return KvCacheDtype(key, DType.of(key, "--kv-cache-dtype"))
    except InputError:
        names = ", ".join(list(_KV_SPECIAL) + [d.value for d in DType if d is not DType.tf32] + list(DTYPE_ALIASES))
        raise InputError(f"{where} {shown(text)} is not a KV-cache dtype; choose one of {names}") from None


class LogprobsMode(str, enum.Enum):
    """vLLM V1's --logprobs-mode (vllm v0.11.2 vllm/config/model.py:84 LogprobsMode, :201 default raw_logprobs;
    v0.10.2 vllm/config/__init__.py:267): which logits the logprobs are taken from. The two processed modes return
    the logits after top-k / top-p, which FlashInfer's sampler does not give back, so from v0.10.2 TopKTopPSampler
    keeps the native sort for them whatever FlashInfer and VLLM_USE_FLASHINFER_SAMPLER say (vllm v0.10.2
    vllm/v1/sample/ops/topk_topp_sampler.py:39-41, v0.11.0 :37-38, v0.11.2 :30-33, v0.12.0 - v0.14.0 :31-34;
    v0.10.1.1's __init__ takes no mode and samples with FlashInfer; profile.py). NeMo RL's generation workers set
    processed_logprobs (set 8's v0.11.2 Gemma-3 log: 'non-default args')."""

    raw_logprobs = "raw_logprobs"
    raw_logits = "raw_logits"
    processed_logprobs = "processed_logprobs"
    processed_logits = "processed_logits"

    @property
    def processed(self) -> bool:
        return self in (LogprobsMode.processed_logprobs, LogprobsMode.processed_logits)

    def __str__(self) -> str:
        return self.value


def parse_logprobs_mode(text: str, where: str = "--logprobs-mode") -> LogprobsMode:
    """--logprobs-mode as vLLM spells it; anything else an InputError naming `where` (the option, or a log's line
    that states the value), the value and the choices."""
    try:
        return LogprobsMode(text)
    except ValueError:
        raise InputError(f"{where} must be one of {', '.join(m.value for m in LogprobsMode)}, got "
                         f"{shown(text)}") from None


def image_limit(value: object, where: str = "--limit-mm-per-prompt") -> "int | None":
    """vLLM's --limit-mm-per-prompt, parsed (the CLI's JSON, a log's dict: {"image": N} or vLLM's per-modality
    {"image": {"count": N, ...}}), to the images a prompt may hold (EngineSettings.limit_mm_per_prompt; None where
    it sets none). rooflab models the image modality only: another modality's key is refused, naming `where` (the
    option as typed, or a log's line) as every other problem is, a count past MAX_TOKENS (limits.py) too."""
    if not isinstance(value, dict) or set(value) - {"image"}:
        raise InputError(f"{where}: give an object of images, '{{\"image\": N}}' (rooflab models the image "
                         "modality only)")
    count = value.get("image")
    if count is None:
        return None
    if isinstance(count, dict):               # vLLM's per-modality options: {"image": {"count": N, ...}}
        count = count.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InputError(f"{where}: the image count must be a whole number 0 or more")
    if count > MAX_TOKENS:
        raise InputError(f"{where}: the image count must be a whole number from 0 to {MAX_TOKENS:,} (far past any "
                         f"real workload), got {count:,}")
    return count


class MambaCacheMode(str, enum.Enum):
    """vLLM's --mamba-cache-mode (vllm/config/cache.py MambaCacheMode). none: prefix caching off, one state page a
    request and group (V1's default for hybrid models until PR #50991, 2026-08, after the releases modelled);
    align: the mode prefix caching switches a GDN model to, two pages (vllm/model_executor/models/config.py
    MambaModelConfig). 'all' (every block's state, Mamba2 models only) is not modelled."""

    none = "none"
    align = "align"

    def __str__(self) -> str:
        return self.value


def parse_mamba_cache_mode(text: str) -> MambaCacheMode:
    key = str(text).strip().lower()
    if key not in MambaCacheMode._value2member_map_:
        raise InputError(f"--mamba-cache-mode {shown(text)}: choose none or align ('all' keeps every block's state and is "
                         "Mamba2's, not modelled)")
    return MambaCacheMode(key)


def kv_cache_dtype_of(dtype: DType | None) -> KvCacheDtype:
    """rooflab's --kv-dtype as an engine name (None: auto)."""
    return KvCacheDtype("auto" if dtype is None else dtype.value, dtype)


__all__ = ["ACCOUNTING_ENGINES", "Accounting", "DEFAULT_ACCOUNTING", "ENGINE_VERSION_FORMS", "EngineVersion",
           "RELEASE_RANGE", "SERIES_NEWEST", "Engine", "KvCacheDtype", "accounting_of", "generations_text", "in_range",
           "in_span", "label_release", "labels_text", "parse_engine_version", "release_text", "span_newest",
           "span_text",
           "VLLM_KV_CACHE_DTYPES", "vllm_kv_cache_dtypes", "LogprobsMode", "MambaCacheMode", "kv_cache_dtype_of",
           "image_limit", "parse_accounting", "parse_engine", "parse_kv_cache_dtype", "parse_logprobs_mode",
           "parse_mamba_cache_mode"]
