"""Explain a start-up log: the engine's KV figure rebuilt from the log's own terms, checked, then what-ifs.

Each term is taken from the log where it prints it and modelled where it does not (memory.py, profile.py),
and the KV figure follows the accounting the log's format belongs to (vllm.py, sglang.py):

    vLLM     KV = u T - weights - activation peak - non-torch   (v0.6.4: u T - peak_torch - non-torch, with
             the activation = peak_torch - the weights line); blocks and tokens from the model's page (layout.py)
    SGLang   pool = post - (1 - f) pre  (pre, post: free memory before and after the weights load); tokens =
             pool // cell; the K-size line checks the cell: (tokens + page) x K bytes per token

A log that prints the KV figure but not every term (a block count, 'Available KV cache memory' alone) is
anchored on that figure: the terms it lacks are modelled and what the figure implies beyond them is the
'unattributed' term, so the terms still add up to the total.

A what-if (another KV dtype, TP size, block size, max-model-len or utilisation; or a sizing override: enforce-eager,
max-total-tokens, num-gpu-blocks-override, kv-cache-memory-bytes, overrides.py) keeps what the log measured
and scales it by the model: weights and activation peak by the ratio of their modelled values, non-torch
memory (or SGLang's memory in use before start) by the change of its default; an unattributed term stays.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import Optional

from ..cost.checks import check_spec
from ..errors import InputError, shown
from ..specs import GpuSpec, ModelSpec
from ..units import GiB
from . import sglang as sglang_mod
from . import vllm as vllm_mod
from .layout import BlockLayout, engine_states, sglang_cell, vllm_layout
from .logrules import SAMPLER_RAN
from .logs import EngineLog
from .memory import LORA, lora_term
from .result import EngineCapacity, Role, Term
from .settings import EngineSettings, resolve
from .vocab import (Engine, accounting_of, image_limit, label_release, parse_kv_cache_dtype, parse_logprobs_mode,
                    release_text)

UNATTRIBUTED = ("unattributed", "what the logged KV figure implies beyond the terms above (the log does not print "
                                "them all; the others are modelled)")


@dataclass(frozen=True)
class Check:
    """A logged figure beside the one rebuilt from the log's terms."""

    figure: str
    logged: float
    reproduced: float
    source: str

    @property
    def rel_error(self) -> float:
        return (self.reproduced - self.logged) / self.logged if self.logged else 0.0

    def to_dict(self) -> dict:
        return {"figure": self.figure, "logged": self.logged, "reproduced": self.reproduced,
                "rel_error": self.rel_error, "source": self.source}


@dataclass(frozen=True)
class LogExplanation:
    """A log's KV figure rebuilt term by term (`reproduced`), the checks against the logged figures, rooflab's own
    prediction for the same settings with nothing read from the log (`modelled`), and a what-if.

    `anchored` says the log prints a KV figure but not every term: the reproduction starts from that figure.
    """

    log: str
    formats: tuple[str, ...]
    reproduced: EngineCapacity
    checks: tuple[Check, ...]
    modelled: EngineCapacity
    anchored: bool
    what_if: Optional[EngineCapacity] = None
    changes: tuple[str, ...] = ()
    settings_taken: tuple[str, ...] = ()   # each setting, and whether the log or the options gave it

    def check(self, figure: str) -> Optional[Check]:
        return next((c for c in self.checks if c.figure == figure), None)

    def to_dict(self) -> dict:
        doc = self.reproduced.to_dict()
        doc.update(log=self.log, formats=list(self.formats), anchored=self.anchored,
                   settings_taken=list(self.settings_taken),
                   checks=[c.to_dict() for c in self.checks], logged={c.figure: c.logged for c in self.checks},
                   modelled={k: getattr(self.modelled, k) for k in ("kv_cache_bytes", "num_blocks", "kv_cache_tokens",
                                                                     "max_concurrency")},
                   what_if=None if self.what_if is None else dict(self.what_if.to_dict(), changes=list(self.changes)))
        return doc


def explain_log(log: EngineLog, model: ModelSpec, gpu: GpuSpec, settings: EngineSettings,
                changes: dict | None = None, given: frozenset[str] = frozenset()) -> LogExplanation:
    """Rebuild `log`'s KV figure from its terms for `model` on `gpu`, check it against the logged figures, and
    apply `changes` (EngineSettings fields) as a what-if.

    `settings` describe the logged run; what the log itself prints (TP size, utilisation, max-model-len) fills in
    what the user did not give (`given`: the EngineSettings fields set explicitly) and contradicts what they did.
    """
    if not isinstance(log, EngineLog):
        raise InputError(f"log must be an EngineLog (rooflab.engines.logs.read_log(path)), got {shown(log)}")
    check_spec(model, ModelSpec, "model")
    check_spec(gpu, GpuSpec, "gpu")
    if not isinstance(settings, EngineSettings):
        raise InputError(f"settings must be a rooflab.engines.EngineSettings, got {shown(settings)}")
    if changes is not None and not isinstance(changes, dict):
        raise InputError(f"changes must be a dict of EngineSettings fields (request.parse_what_if), got "
                         f"{shown(changes)}")
    settings = _with_log(log, settings, given)
    model = model.as_loaded(gpu.compute_capability_version, settings.dtype)   # as engine_capacity loads it (one path)
    taken = settings_taken(log, settings)
    build = _vllm if log.engine is Engine.vllm else _sglang
    reproduced, terms, anchored = build(log, model, gpu, settings)
    modelled = _modelled(model, gpu, settings)
    checks = _checks(log, reproduced, terms.get("k_bytes_per_token", 0))
    what_if, described = None, ()
    if changes:
        new = dataclasses.replace(settings, **changes)
        what_if = _scaled(model, gpu, settings, new, terms, modelled)
        described = tuple(f"{k.replace('_', '-')}={getattr(v, 'name', v)}" for k, v in changes.items())
    return LogExplanation(log.name, log.formats, reproduced, checks, modelled, anchored, what_if, described, taken)


_SETTING_NAMES = (("tensor_parallel", "TP size"), ("kv_cache_dtype", "KV-cache dtype"), ("block_size", "block size"),
                  ("max_model_len", "max model len"), ("utilization", "memory utilisation"), ("dtype", "dtype"))


def settings_taken(log: EngineLog, settings: EngineSettings) -> tuple[str, ...]:
    """One line per setting: its value and whether it came from the log (with the line) or from the options or
    the engine's default. dtype is reported only (the model spec's dtype is planned; a log that states another
    says so here)."""
    lines = []
    release = log.setting("release")
    if release is not None:
        used = settings.release is not None and _logged_release(log, settings.accounting) is not None
        lines.append(f"release v{release.value}: from the log ({release.source})" + (
            "" if used else f"; outside {settings.accounting}'s releases ({settings.accounting.releases}): its "
                            f"label's {release_text(label_release(settings.accounting))} is modelled"))
    for key, label in _SETTING_NAMES:
        logged = log.setting(key) if key in ("kv_cache_dtype", "dtype") else log.get(key)
        value = getattr(settings, key, None)
        shown = getattr(value, "name", value)
        if logged is not None:
            lines.append(f"{label} {logged.value if key in ('kv_cache_dtype', 'dtype') else shown}: from the log "
                         f"({logged.source})")
        elif key != "dtype":
            lines.append(f"{label} {shown if shown is not None else 'default'}: from the options or the "
                         "engine's default")
    ran, mode = log.setting("sampler"), log.setting("logprobs_mode")
    if ran is not None:
        lines.append(f"sampler {SAMPLER_RAN[ran.value]}: from the log ({ran.source})")
    if mode is not None:
        lines.append(f"--logprobs-mode {mode.value}: from the log ({mode.source})")
    for key, option in _OVERRIDES:       # the overrides: only where the log states one or the options set it
        logged, value = log.setting(key), getattr(settings, key)
        printed = f'{{"image": {value}}}' if key == "limit_mm_per_prompt" and value is not None else value
        if logged is not None and value is not None:
            lines.append(f"{option} {printed}: from the log ({logged.source})")
        elif value is not None and value is not False:
            lines.append(f"{option} {printed}: from the options")
    return tuple(lines)


def _logged_release(log: EngineLog, accounting) -> Optional[tuple[int, ...]]:
    """The release the log's engine line states, as numbers, where `accounting` covers it (vocab.RELEASE_RANGE);
    None where the log states none or one outside the range (the release the accounting's label
    stands for is modelled then: vocab.label_release)."""
    from ..vocab import engine_release
    from .vocab import in_range

    logged = log.setting("release")
    numbers = engine_release(logged.value) if logged is not None else None
    return numbers if numbers is not None and in_range(accounting, numbers) else None


def log_generation(log: EngineLog) -> Optional[tuple[bool, str]]:
    """(V1, what says so) where a vLLM log shows which engine ran: its engine line ('Initializing a V1 LLM engine
    (v0.11.2)' is V1; V0's reads 'an LLM engine' or 'a V0 LLM engine'), else the V1 or V0 formats it matched; None
    where neither does (an SGLang log, or vLLM lines both engines print)."""
    if log.engine is not Engine.vllm:
        return None
    line = log.setting("release")
    if line is not None:
        return "V1 LLM engine" in line.text, line.source
    for v1, prefix in ((True, "vLLM V1"), (False, "vLLM V0")):
        named = [f for f in log.formats if f.startswith(prefix)]
        if named:
            return v1, f"its {', '.join(named)}"
    return None


def check_generation(log: EngineLog, v1: bool, option: str) -> None:
    """An InputError naming `option` (--vllm-use-v1 0, --engine-version v0) where it asks for vLLM's V1 (`v1`) or V0
    engine and the log shows the other one ran (log_generation)."""
    shown_by = log_generation(log)
    if shown_by is not None and shown_by[0] is not v1:
        raise InputError(f"{option} ({'V1' if v1 else 'V0'}) contradicts the log's {'V1' if shown_by[0] else 'V0'} "
                         f"engine ({shown_by[1]}); drop the option")


def _check_logged_release(log: EngineLog, settings: EngineSettings, given: frozenset[str]) -> None:
    """A release (EngineSettings.release) other than the one the log's engine line states is an error naming both;
    so is a label (`given` an accounting, no release) of another accounting than the one the log's release reads
    as, and a V0 or V1 accounting against a log of the other engine (check_generation)."""
    from ..vocab import engine_release

    logged = log.setting("release")
    numbers = engine_release(logged.value) if logged is not None else None
    if numbers is not None and settings.release is not None and settings.release[:3] != numbers[:3]:
        raise InputError(f"--engine-version {'.'.join(map(str, settings.release))} contradicts the log's "
                         f"v{logged.value} ({logged.source}); drop the option")
    if "accounting" not in given:
        return
    version = release_text(settings.release) if settings.release is not None else settings.accounting.short
    check_generation(log, settings.accounting.is_v1, f"--engine-version {version}")
    if numbers is not None and settings.release is None and settings.accounting is not log.accounting:
        raise InputError(f"--engine-version {version} ({settings.accounting.releases}) contradicts the log's "
                         f"v{logged.value} ({logged.source}), which rooflab reads as {log.accounting}; drop the option")


def _with_log(log: EngineLog, settings: EngineSettings, given: frozenset[str]) -> EngineSettings:
    """The settings with what the log prints; a value the user gave that the log contradicts is an error."""
    if settings.engine is not log.engine:
        raise InputError(f"--engine-log {log.name} is a {log.engine.title} log, but --engine is {settings.engine}")
    _check_logged_release(log, settings, given)
    updates = {} if "accounting" in given else {"accounting": log.accounting}
    if "accounting" not in given and settings.release is not None and log.setting("release") is None:
        # a release the caller knows and the log does not state picks the accounting as the log's own would
        updates["accounting"] = accounting_of(log.engine, settings.release, log.accounting.is_v1) or log.accounting
    release = _logged_release(log, updates.get("accounting", settings.accounting))
    if release is not None:
        updates["release"] = release
    kv = log.setting("kv_cache_dtype")
    if kv is not None and kv.value != "auto":
        logged_kv = parse_kv_cache_dtype(kv.value, where=_stated(log, kv, "kv_cache_dtype"))
        if "kv_cache_dtype" in given and settings.kv_cache_dtype.dtype != logged_kv.dtype:
            raise InputError(f"--kv-cache-dtype {settings.kv_cache_dtype.name} contradicts the log's {kv.value} "
                             f"({kv.source}); drop the option or use --what-if kv-cache-dtype=...")
        updates["kv_cache_dtype"] = logged_kv
    for field, key, option in (("tensor_parallel", "tensor_parallel", "--tp"),
                               ("max_model_len", "max_model_len", "--max-model-len"),
                               ("utilization", "utilization", "--gpu-memory-utilization"),
                               ("block_size", "block_size", "--block-size")):
        logged = log.get(key)
        if logged is None:
            continue
        value = logged.value if field == "utilization" else int(logged.value)
        if field in given and getattr(settings, field) != value:
            raise InputError(f"{option} {getattr(settings, field)} contradicts the log's {value} ({logged.source}); "
                             f"drop the option or use --what-if {option.lstrip('-')}=...")
        updates[field] = value
    updates.update(_logged_overrides(log, settings, given))
    updates.update(_logged_sampler(log, settings, given))
    return dataclasses.replace(settings, **updates)


#: What each sampler line says (logrules.SAMPLER_LINES) as EngineSettings' fields: FlashInfer ran (installed, and
#: VLLM_USE_FLASHINFER_SAMPLER unset before v0.11.1 or set: True samples with it in every release that prints the
#: line), it is not installed, or VLLM_USE_FLASHINFER_SAMPLER=0 kept the sort.
_SAMPLER_SETTINGS = {"flashinfer": {"flashinfer_installed": True, "use_flashinfer_sampler": True},
                     "not_installed": {"flashinfer_installed": False},
                     "not_enabled": {"flashinfer_installed": True, "use_flashinfer_sampler": False}}


def _logged_sampler(log: EngineLog, settings: EngineSettings, given: frozenset[str]) -> dict:
    """The sampler the log says ran and the --logprobs-mode its arguments state, as EngineSettings changes; a value
    the user gave that the log contradicts is an error naming both (--no-flashinfer against 'Using FlashInfer'),
    and a mode vLLM has no such name for is one naming the log's line."""
    updates = {}
    ran, mode = log.setting("sampler"), log.setting("logprobs_mode")
    stated = dict(_SAMPLER_SETTINGS[ran.value]) if ran is not None else {}
    if mode is not None:
        stated["logprobs_mode"] = parse_logprobs_mode(mode.value, where=_stated(log, mode, "logprobs_mode"))
    for field, value in stated.items():
        logged = mode if field == "logprobs_mode" else ran
        if field in given and getattr(settings, field) != value:
            says = f"--logprobs-mode {value}" if logged is mode else f"{SAMPLER_RAN[ran.value]} ran"
            raise InputError(f"{_as_given(field, getattr(settings, field))} contradicts the log: {says} "
                             f"({logged.source}); drop the option")
        updates[field] = value
    return updates


def _as_given(field: str, value) -> str:
    """A sampler setting as the user gives it: '--no-flashinfer', 'VLLM_USE_FLASHINFER_SAMPLER=0'."""
    if field == "flashinfer_installed":
        return "--no-flashinfer" if not value else "FlashInfer installed (no --no-flashinfer)"
    if field == "use_flashinfer_sampler":
        return f"VLLM_USE_FLASHINFER_SAMPLER={int(value)}"
    return f"{EngineSettings.OPTIONS[field]} {value}"


def _stated(log: EngineLog, logged, key: str) -> str:
    """Where a setting's text came from, for the error refusing it: the log, its line and the setting's name (as
    logs.py names a figure it cannot read)."""
    return f"--engine-log {log.name} line {logged.line_no}: {key}"


#: The sizing overrides a configuration line may state (overrides.py) and vLLM's multimodal profile options
#: (profile.py encoder_cache), each with its options' words.
_OVERRIDES = (("enforce_eager", "--enforce-eager / --disable-cuda-graph"), ("max_total_tokens", "--max-total-tokens"),
              ("num_gpu_blocks_override", "--num-gpu-blocks-override"),
              ("kv_cache_memory_bytes", "--kv-cache-memory-bytes"), ("limit_mm_per_prompt", "--limit-mm-per-prompt"),
              ("skip_mm_profiling", "--skip-mm-profiling"))
#: Of them, the flags (a log prints True or False).
_FLAGS = ("enforce_eager", "skip_mm_profiling")
#: The most characters of a logged --limit-mm-per-prompt dict read (vLLM prints a few per modality).
_MAX_MM_LIMIT_CHARS = 1000


def _logged_overrides(log: EngineLog, settings: EngineSettings, given: frozenset[str]) -> dict:
    """The sizing overrides and multimodal options the log's configuration line states (vLLM's enforce_eager,
    num_gpu_blocks_override, kv_cache_memory_bytes, limit_mm_per_prompt and skip_mm_profiling, SGLang's
    disable_cuda_graph and max_total_tokens), as EngineSettings changes; one the user gave that the log contradicts
    is an error naming both."""
    updates = {}
    for field, option in _OVERRIDES:
        logged = log.setting(field)
        value = None if logged is None else _override_value(log, field, logged)
        if value is None:
            continue
        if field in given and getattr(settings, field) != value:
            raise InputError(f"{option} {getattr(settings, field)} contradicts the log's {value} ({logged.source}); "
                             "drop the option")
        updates[field] = value
    return updates


def _override_value(log: EngineLog, field: str, logged):
    """A logged override's text as its EngineSettings value: a flag, the images of a --limit-mm-per-prompt dict
    (vocab.image_limit; None where it limits none), else a count. A logged dict's other modalities are left out
    (heldout 2 and 3's Qwen3.6 logs state {'image': 2, 'audio': 0}): the run had them, and rooflab models the
    image modality only, where the option refuses them so that none is thought modelled."""
    if field in _FLAGS:
        return logged.value == "True"
    if field != "limit_mm_per_prompt":
        return int(logged.value)
    where = _stated(log, logged, field)
    try:
        value = ast.literal_eval(logged.value) if len(logged.value) <= _MAX_MM_LIMIT_CHARS else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    images = {k: v for k, v in value.items() if k == "image"} if isinstance(value, dict) else value
    return image_limit(images, f"{where} {logged.value[:60]}")


def _modelled(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings) -> EngineCapacity:
    fn = vllm_mod.vllm_capacity if settings.engine is Engine.vllm else sglang_mod.sglang_capacity
    return fn(model, gpu, settings)


def _vllm(log: EngineLog, model: ModelSpec, gpu: GpuSpec, settings: EngineSettings):
    """(capacity, terms, anchored): T, the budget, weights, activation and non-torch from the log where printed."""
    modelled = vllm_mod.vllm_capacity(model, gpu, settings)
    total = log.get("total")
    u = log.value("utilization") or settings.utilization or 0.9
    s = resolve(dataclasses.replace(settings, utilization=u,
                                    cuda_visible_bytes=int(total.value) if total else settings.cuda_visible_bytes),
                model, gpu)
    layout = vllm_layout(model, s)
    budget = log.get("budget")
    budget_bytes = int(budget.value) if budget else int(s.cuda_visible_bytes * u)
    weights = _term(log, "weights", modelled, "weights")
    if log.get("activation") is None and log.get("peak_torch") is not None:
        peak = log.get("peak_torch")
        activation = (int(peak.value) - weights[0], f"peak_torch_memory - weights ({peak.source})")
    else:
        activation = _term(log, "activation", modelled, "activation_peak")
    non_torch = _term(log, "non_torch", modelled, "non_torch")
    used = vllm_mod.used_terms(s.accounting, weights, activation, non_torch)
    lora = modelled.term(LORA)
    if lora is not None and log.get("weights") is None:   # a logged weights figure holds the LoRA buffers
        used.append(lora)
    complete = all(log.get(k) for k in ("weights", "non_torch")) and (log.get("activation") or log.get("peak_torch"))
    # a KV cache given in bytes is no remainder to anchor on; overridden blocks say nothing of the memory
    anchor = None if complete or s.kv_cache_memory_bytes is not None else \
        _vllm_anchor(log, layout, blocks_tell=s.num_gpu_blocks_override is None)
    rest = 0
    if anchor is not None:
        rest = budget_bytes - anchor - sum(t.bytes for t in used)
        used.append(Term(UNATTRIBUTED[0], rest, UNATTRIBUTED[1], Role.used))
    capacity = vllm_mod.assemble(model, gpu, s, used, layout, total_src=total.source if total else None,
                                 budget_bytes=budget_bytes,
                                 notes=log.notes + _weights_note(log, modelled, s.tensor_parallel))
    terms = {"weights": weights[0], "activation": activation[0], "non_torch": non_torch[0], "unattributed": rest,
             "budget": budget_bytes, "total": s.cuda_visible_bytes, "utilization": u}
    return capacity, terms, anchor is not None


def _vllm_anchor(log: EngineLog, layout: BlockLayout, blocks_tell: bool = True) -> Optional[int]:
    """The KV bytes the log's own figure says: the logged bytes, else (`blocks_tell`: no --num-gpu-blocks-override)
    its blocks (or tokens, or V1's concurrency x the blocks one request holds) x the block's bytes."""
    if log.get("kv_bytes") is not None:
        return int(log.value("kv_bytes"))
    if not blocks_tell:
        return None
    if log.get("gpu_blocks") is not None:
        return int(log.value("gpu_blocks")) * layout.block_bytes
    if log.get("kv_tokens") is not None:
        return int(log.value("kv_tokens")) // layout.block_size * layout.num_groups * layout.block_bytes
    if log.get("concurrency_tokens") is not None:    # V1's concurrency alone: X = blocks / blocks a request holds
        return round(log.value("concurrency") * layout.blocks_per_request) * layout.block_bytes
    return None


def _sglang(log: EngineLog, model: ModelSpec, gpu: GpuSpec, settings: EngineSettings):
    """(capacity, terms, anchored) from the free memory before and after the weights load, where logged."""
    modelled = sglang_mod.sglang_capacity(model, gpu, settings)
    slots = log.get("state_slots")
    if slots is not None and settings.max_mamba_cache_size is None:   # the state pool as the log allocated it
        settings = dataclasses.replace(settings, max_mamba_cache_size=int(slots.value))
    s = resolve(settings, model, gpu)
    cell = sglang_cell(model, s)
    before_load, after_load, usage = log.get("free_before_load"), log.get("free_after_load"), log.get("weights")
    if before_load is None and after_load is not None and usage is not None:
        pre, pre_src = int(after_load.value + usage.value), f"free after loading + mem usage ({after_load.source})"
    elif before_load is not None:
        pre, pre_src = int(before_load.value), before_load.source
    else:
        pre = None
    if pre is None:
        default = modelled.term("in_use_before_start")
        before = (default.bytes, default.source.split(": ", 1)[-1])
        pre, pre_src = (s.cuda_visible_bytes - before[0] - s.memory_in_use_bytes,
                        "modelled: total less the memory in use before")
    else:
        before = (s.cuda_visible_bytes - pre, f"total ({s.cuda_visible_source}) less the free memory at start")
    if after_load is not None:
        weights = (pre - int(after_load.value), f"free before - free after loading ({after_load.source})")
    else:
        weights = _term(log, "weights", modelled, "weights")
    extra, rest = (), 0
    tokens = log.get("kv_tokens")
    anchored = after_load is None and tokens is not None and s.max_total_tokens is None   # a cap is no remainder
    if anchored:
        f = s.utilization if s.utilization is not None else modelled.utilization
        pool = int(tokens.value) * (cell.block_bytes // cell.block_size)
        rest = pre - int(pre * (1 - f)) - weights[0] - pool - _off_pool(model, s, pre, f, weights[0], pool)
        extra = (Term(UNATTRIBUTED[0], rest, UNATTRIBUTED[1], Role.used),)
    notes = _weights_note(log, modelled, s.tensor_parallel, logged=weights[0] if after_load is not None else None)
    capacity = sglang_mod.assemble(model, gpu, s, pre, before, weights, pre_src=pre_src, extra=extra, notes=notes)
    terms = {"pre": pre, "weights": weights[0], "before": before[0], "unattributed": rest,
             "utilization": capacity.utilization, "k_bytes_per_token": cell.k_bytes_per_token}
    return capacity, terms, anchored


def _off_pool(model: ModelSpec, s, pre: int, f: float, weights: int, pool: int) -> int:
    """What SGLang takes off its rest besides the KV pool (LoRA buffers, the linear-attention state pool), for an
    anchored replay: the state pool of the log's slots, else the share --mamba-full-memory-ratio gives it of the
    rest the pool implies (sglang.py)."""
    lora = lora_term(model, s, Engine.sglang)
    taken = lora.bytes if lora else 0
    states = engine_states(model, s, Engine.sglang)
    if not states:
        return taken
    per_request = sum(st.bytes_per_sequence for st in states)
    if s.max_mamba_cache_size is not None:
        return taken + s.max_mamba_cache_size // s.attention_data_parallel * per_request
    r = s.mamba_full_memory_ratio if s.mamba_full_memory_ratio is not None else sglang_mod.MAMBA_FULL_MEMORY_RATIO
    return taken + int(pool * r)       # slots x P = r / (1 + r) of a rest whose 1 / (1 + r) is the pool


def _weights_note(log: EngineLog, modelled: EngineCapacity, tp: int, logged: int | None = None) -> tuple[str, ...]:
    """A note when the log's weights are far from the model's at this TP size: the wrong --model or --tp."""
    if logged is None:
        logged = log.value("weights")
    expected = modelled.term("weights").bytes
    if not logged or not expected or 0.8 <= logged / expected <= 1.25:
        return ()
    return (f"the log's weights ({logged / GiB:.2f} GiB) are {logged / expected:.2f}x what {modelled.model} takes at "
            f"TP {tp} ({expected / GiB:.2f} GiB): check --model and --tp",)


def _term(log: EngineLog, key: str, modelled: EngineCapacity, name: str) -> tuple[int, str]:
    figure = log.get(key)
    if figure is not None:
        return int(figure.value), figure.source
    term = modelled.term(name)
    return term.bytes, term.source.split(": ", 1)[-1]


def _checks(log: EngineLog, r: EngineCapacity, k_bytes_per_token: int = 0) -> tuple[Check, ...]:
    """The logged figures beside the rebuilt ones: KV bytes, blocks, tokens, concurrency, SGLang's K size."""
    checks = []
    rest = next((t.bytes for t in r.terms if t.name == "num_gpu_blocks_override_rest"), 0)
    sized = r.kv_cache_bytes + rest       # vLLM logs the memory it sized, before --num-gpu-blocks-override (overrides)
    pairs = [("kv_cache_bytes", "kv_bytes", sized), ("num_blocks", "gpu_blocks", r.num_blocks),
             ("kv_cache_tokens", "kv_tokens", r.kv_cache_tokens), ("max_concurrency", "concurrency", r.max_concurrency),
             ("max_running_requests", "max_running_requests", r.max_running_requests)]
    for figure, key, value in pairs:
        logged = log.get(key)
        if logged is not None and value is not None:
            checks.append(Check(figure, logged.value, value, logged.source))
    blocks, kv_bytes = log.get("gpu_blocks"), log.get("kv_bytes")
    if blocks is not None and log.get("kv_tokens") is None:
        checks.append(Check("kv_cache_tokens", blocks.value * r.block_size, r.kv_cache_tokens,
                            f"{blocks.source} (x {r.block_size} tokens a block)"))
    elif r.engine == "vllm" and kv_bytes is not None and log.get("kv_tokens") is None:
        tokens = int(kv_bytes.value) // r.block_bytes // r.num_groups * r.block_size
        checks.append(Check("kv_cache_tokens", tokens, r.kv_cache_tokens,
                            f"derived from the logged KV bytes ({kv_bytes.source})"))
    size = log.get("k_size") or log.get("kv_size")
    if size is not None and r.engine == "sglang":
        per_token = r.block_bytes // r.block_size if log.get("kv_size") else k_bytes_per_token
        tokens = log.value("kv_tokens")
        n = tokens if tokens is not None else r.kv_cache_tokens
        checks.append(Check("k_size_bytes", size.value, (n + r.block_size) * per_token, size.source))
    return tuple(checks)


def _scaled(model: ModelSpec, gpu: GpuSpec, old: EngineSettings, new: EngineSettings, terms: dict,
            modelled_old: EngineCapacity) -> EngineCapacity:
    """The what-if: the log's terms scaled by the model (module docstring)."""
    modelled_new = _modelled(model, gpu, new)

    def scaled(value: int, name: str, what: str) -> tuple[int, str]:
        a, b = modelled_old.term(name).bytes, modelled_new.term(name).bytes
        if not a:
            return b, f"modelled (the log's {what} is 0)"
        return int(value * b / a), f"the log's {what} x {b / a:.3f} (the modelled ratio)"

    def shifted(value: int, name: str, what: str) -> tuple[int, str]:
        delta = modelled_new.term(name).bytes - modelled_old.term(name).bytes
        sign = "+" if delta >= 0 else "-"
        return max(0, value + delta), f"the log's {what} {sign} {abs(delta) / GiB:.2f} GiB (the change of its default)"

    u = new.utilization if new.utilization is not None else terms["utilization"]
    weights = scaled(terms["weights"], "weights", "weights")
    kept = (Term(UNATTRIBUTED[0], terms["unattributed"], "kept from the log", Role.used),) \
        if terms["unattributed"] else ()
    note = ("what-if: the log's measured terms, scaled by the model where the change moves them",)
    if new.engine is Engine.vllm:
        s = resolve(dataclasses.replace(new, utilization=u, cuda_visible_bytes=terms["total"]), model, gpu)
        budget = terms["budget"] if u == terms["utilization"] else int(terms["total"] * u)
        used = vllm_mod.used_terms(s.accounting, weights,
                                   scaled(terms["activation"], "activation_peak", "activation peak"),
                                   shifted(terms["non_torch"], "non_torch", "non-torch memory")) + list(kept)
        return vllm_mod.assemble(model, gpu, s, used, vllm_layout(model, s), budget_bytes=budget, notes=note)
    s = resolve(dataclasses.replace(new, utilization=u), model, gpu)
    before = shifted(terms["before"], "in_use_before_start", "memory in use before start")
    return sglang_mod.assemble(model, gpu, s, s.cuda_visible_bytes - before[0] - s.memory_in_use_bytes, before,
                               weights, pre_src="the log's, shifted", extra=kept, notes=note)


__all__ = ["Check", "LogExplanation", "explain_log"]
