"""rooflab's closed sets, each defined once: the CLI, the cost model, the bench and the measurement files use these.

    Phase          what a report describes: a prefill, or one decode step
    Variant        an attention implementation the cost model prices (naive, flash, paged, ...)
    Pipe           the compute roof a kernel's FLOPs sit under (tensor cores or the fp32 vector units)
    Bound          the roof that sets a floor (compute, memory)
    CeilingSource  datasheet roofs, the physical ones at the maximum clock, or the ones `rooflab calibrate` measured
    Kernel         what a measurement row timed; KernelFamily groups them as `rooflab bench -k` selects them
    Engine         the serving engines whose schedulers and step kernels rooflab models (vllm, sglang,
                   tensorrt-llm); ENGINE_RELEASES the release each follows where none is given

DType, with every fact about an element type, lives in dtypes.py.
"""

from __future__ import annotations

import enum
import re


class _Named(str, enum.Enum):
    """A closed set whose members print as their value ('flash', not 'Variant.flash')."""

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, value: object, what: str):
        """`value` as a member: a member as is, or its name ('hybrid'); anything else an InputError naming `what`."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value in cls._value2member_map_:
            return cls(value)
        from .errors import InputError, shown
        raise InputError(f"{what} must be one of {', '.join(m.value for m in cls)}, got {shown(value)}")


class Phase(_Named):
    """What a report describes: one attention layer's prefill or decode step, or a whole model's step."""

    prefill = "prefill"
    decode = "decode"
    step = "step"


class StepKind(_Named):
    """Which whole-model step `report --phase step` prices: a decode step (time per output token) or a
    prefill (time to first token)."""

    decode = "decode"
    prefill = "prefill"


class Variant(_Named):
    """The attention implementations rooflab models."""

    naive = "naive"
    flash = "flash"
    paged = "paged"
    split_kv = "split_kv"
    merge = "merge"
    cascade = "cascade"
    recurrent = "recurrent"    # a linear-attention layer's state update (no KV cache)
    mixed = "mixed"            # a decode batch and a prefill chunk in one launch (chunked prefill)


#: The variants `rooflab explain` derives, in the order its help lists them.
EXPLAINED = (Variant.naive, Variant.flash, Variant.paged, Variant.split_kv, Variant.merge, Variant.recurrent)

#: EXPLAINED as an Enum, for the CLI's list of choices (derived, not a second list).
ExplainedVariant = _Named("ExplainedVariant", {v.name: v.value for v in EXPLAINED})


class Pipe(_Named):
    """Which compute roof a kernel's FLOPs sit under."""

    tensor = "tensor"  # matrix units, rate per dtype
    vector = "vector"  # plain fp32 units


class Bound(_Named):
    """The roof that sets a floor: the largest of the compute, exp and memory times."""

    compute = "compute"
    exp = "exp"
    memory = "memory"


class CeilingSource(_Named):
    """Which roofs a floor or prediction is made against.

    datasheet   the rated figures (`dense_tensor_flop_per_s`, fp32 accumulate): the chapters' roofs (H100 ridge 295)
    physical    the highest rate the part can run: the driver's maximum SM clock x the per-clock tensor rate, in the
                fastest accumulate mode the operands have (GeForce fp16 accumulate), datasheet bandwidth
    floor       the GPU's own default: physical where a published run beat the rated figures (the YAML's
                `rated_beaten_by`), else datasheet (GpuSpec.floor_source; CHANGELOG.md says why)
    calibrated  the ceilings `rooflab calibrate` measured (the GPU's `measured:` section): a model, not a bound
    """

    datasheet = "datasheet"
    calibrated = "calibrated"
    physical = "physical"
    floor = "floor"


class LayerKind(_Named):
    """What one layer's attention is, and so what its KV cache or state holds (specs/layers.py)."""

    full = "full"          # MHA / GQA / MQA over every earlier token
    sliding = "sliding"    # a window of the last W tokens (Mistral, Gemma 2/3, gpt-oss)
    chunked = "chunked"    # the tokens of the query's own chunk of C (Llama 4's local layers)
    mla = "mla"            # multi-head latent attention: one d_c + d_R latent per token (DeepSeek-V3, Kimi K2)
    linear = "linear"      # linear attention / recurrent state of fixed size (Gated DeltaNet, Mamba)

    @property
    def keeps_every_token(self) -> bool:
        """Its cache holds every earlier token (full, mla): the layers a shared prefix's pages serve."""
        return self in (LayerKind.full, LayerKind.mla)

    @property
    def splits_by_position(self) -> bool:
        """A KV split by position (decode context or KV parallelism) shares its cache out: every softmax kind's
        pages; a linear layer's fixed state stays whole on every GPU."""
        return self is not LayerKind.linear


class WindowAllocation(_Named):
    """How an engine pages windowed layers: only the pages their window intersects (a hybrid allocator,
    as vLLM's), or a full-length page table like every other layer."""

    hybrid = "hybrid"
    full = "full"


class KernelFamily(_Named):
    """The groups `rooflab bench --kernel` selects: paged includes split-KV, naive its softmax alone."""

    naive = "naive"
    flash = "flash"
    paged = "paged"
    merge = "merge"
    mla = "mla"
    gemm = "gemm"
    collective = "collective"
    distributed = "distributed"


class Kernel(_Named):
    """What one measurement row timed; the `kernel` column of a measurement file."""

    naive = "naive"                  # QK^T, row softmax, PV: three launches
    naive_softmax = "naive_softmax"  # the row softmax of naive attention alone
    flash = "flash"                  # FlashAttention forward
    flash_window = "flash_window"    # FlashAttention forward with a sliding window or chunks (and sinks)
    paged = "paged"                  # paged decode, one launch
    split_kv = "split_kv"            # paged decode over KV splits, then the S-way merge
    paged_window = "paged_window"    # paged decode reading only a window's pages (sinks, split-KV too)
    paged_multi = "paged_multi"      # paged decode with several new tokens per sequence (q_len > 1)
    mla_decode = "mla_decode"        # absorbed MLA decode over a paged latent cache
    merge = "merge"                  # the pairwise LSE merge
    gemm = "gemm"                    # a projection or MLP GEMM (cuBLAS through torch): m x n x k
    all_reduce = "all_reduce"        # NCCL collectives, bytes_per_rank over world_size ranks
    all_gather = "all_gather"
    reduce_scatter = "reduce_scatter"
    all_to_all = "all_to_all"
    send_recv = "send_recv"
    dcp_decode = "dcp_decode"        # decode context parallelism: KV split by position, partials merged
    tp_attention = "tp_attention"    # one tensor-parallel attention layer with its all-reduce
    ring_prefill = "ring_prefill"    # ring attention prefill (pass-KV)
    decode_step = "decode_step"      # a whole model's decode step (a torch layer stack in a CUDA graph)

    @property
    def family(self) -> KernelFamily:
        return _FAMILY[self]

    @property
    def is_decode(self) -> bool:
        return self in (Kernel.paged, Kernel.split_kv, Kernel.paged_window, Kernel.paged_multi, Kernel.mla_decode,
                        Kernel.dcp_decode)

    @property
    def is_collective(self) -> bool:
        return self.family is KernelFamily.collective


_FAMILY = {
    Kernel.naive: KernelFamily.naive, Kernel.naive_softmax: KernelFamily.naive, Kernel.flash: KernelFamily.flash,
    Kernel.flash_window: KernelFamily.flash, Kernel.paged: KernelFamily.paged, Kernel.split_kv: KernelFamily.paged,
    Kernel.paged_window: KernelFamily.paged, Kernel.paged_multi: KernelFamily.paged, Kernel.mla_decode: KernelFamily.mla,
    Kernel.merge: KernelFamily.merge, Kernel.gemm: KernelFamily.gemm, Kernel.all_reduce: KernelFamily.collective,
    Kernel.all_gather: KernelFamily.collective, Kernel.reduce_scatter: KernelFamily.collective,
    Kernel.all_to_all: KernelFamily.collective, Kernel.send_recv: KernelFamily.collective,
    Kernel.dcp_decode: KernelFamily.distributed, Kernel.tp_attention: KernelFamily.distributed,
    Kernel.ring_prefill: KernelFamily.distributed, Kernel.decode_step: KernelFamily.distributed,
}


class PeerTransport(_Named):
    """How NCCL moves data between two GPUs of one host, and so where its buffers live (GpuSpec.peer_transport).

    NCCL's P2P transport uses CUDA peer access over NVLink or PCIe alike and keeps its buffers on the GPU; where
    peer access is refused it falls back to the SHM transport, whose buffers are in host memory (NCCL user guide,
    Environment Variables: NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_SHM_DISABLE "SHM is used between devices when
    peer-to-peer cannot happen, therefore, host memory is used"; NVIDIA/nccl discussion #2236: "To NCCL, nvlink
    p2p and pcie p2p are the same")."""

    device_link = "device_link"   # NVLink / NVSwitch / a bridge: P2P transport, many channels; custom all-reduce
    pcie_p2p = "pcie_p2p"         # PCIe only, peer access allowed: P2P transport over PCIe, few channels
    host = "host"                 # peer access disabled by the driver (GeForce): SHM transport, host buffers


class Engine(_Named):
    """The serving engines whose schedulers (rooflab.serve) and step kernels (rooflab.step.engine_kernels) rooflab
    models; the one engine vocabulary. The capacity accounting (rooflab.engines) follows a subset of it, vllm and
    sglang (rooflab.engines.vocab.ACCOUNTING_ENGINES), and refuses tensorrt-llm by name."""

    vllm = "vllm"
    sglang = "sglang"
    trtllm = "tensorrt-llm"

    @classmethod
    def of(cls, value, what: str = "engine") -> "Engine":
        """A member, or its name in any case, with TensorRT-LLM's other spellings (trt-llm, trtllm, tensorrt_llm)."""
        if isinstance(value, cls):
            return value
        text = str(value).strip().lower() if isinstance(value, str) else None
        text = _ENGINE_ALIASES.get(text, text)
        if text not in cls._value2member_map_:
            from .errors import InputError, shown
            raise InputError(f"{what}: {shown(value)} is not an engine rooflab models; use vllm, sglang or "
                             f"tensorrt-llm")
        return cls(text)

    @property
    def title(self) -> str:
        """The engine's name as its project writes it: vLLM, SGLang, TensorRT-LLM."""
        return _ENGINE_TITLES[self.value]


_ENGINE_TITLES = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM"}
_ENGINE_ALIASES = {"trt-llm": "tensorrt-llm", "trtllm": "tensorrt-llm", "tensorrt_llm": "tensorrt-llm"}

#: The release whose scheduler defaults (rooflab.serve.scheduler's docstring has the sources) and step kernels each
#: engine follows where no --engine-version is given.
ENGINE_RELEASES = {Engine.vllm: "v1 (0.11+)", Engine.sglang: "0.5", Engine.trtllm: "1.0"}
#: Version words that name no release but an engine generation rooflab models (vLLM's V1 engine).
_GENERATIONS = ("v1", ENGINE_RELEASES[Engine.vllm])
#: A release as the engines print it, whole: an optional v (either case: engines print 'v0.8.4'), numbers, then
#: dev / post / rc / a / b parts, then a local +tag ('0.7.4.dev181+gf35f8e22', '0.4.3.post2', '0.26.1rc1'); '0.7.3 ; x'
#: and '0.7xyz' are not one. ASCII digits only (as packaging.version reads a release): a fullwidth or Arabic-Indic
#: '0.9' is refused, not taken as 0.9. The one pattern check_engine_release holds a value to and engine_release reads
#: the numbers with (group 1), so that a release that passes the check reads as the same release.
_RELEASE = re.compile(r"v?([0-9]+(?:\.[0-9]+)+)(?:[.-]?(?:dev|post|rc|a|b)[0-9]*)*(?:\+[0-9a-z.]+)?", re.I | re.A)
#: Every number of a release is below this: a part of 10,000 or more ('0.10.99999') names no release.
RELEASE_PART_LIMIT = 10_000


def engine_release(version) -> "tuple[int, ...] | None":
    """A version's release numbers ('0.7.4.dev181+gf35f8e22' -> (0, 7, 4), 'V0.4.3.post2' -> (0, 4, 3)), or None
    where it names none (empty, 'v1 (0.11+)': vLLM's V1 engine, not a release). Read from the start of the text
    with _RELEASE, the pattern check_engine_release holds a whole value to."""
    match = _RELEASE.match(str(version or "").strip())
    return tuple(int(n) for n in match.group(1).split(".")) if match else None


def engine_name(engine) -> str:
    """An engine given as an enum member, its value or nothing, as the facts' lower-case name ('' for none)."""
    return str(getattr(engine, "value", engine) or "").lower()


def fact_of_line(facts, engine, version):
    """The first of `facts` (each with .engine and .version, a release read) for `engine` whose minor line is
    `version`'s (a fact read at 0.7.3 holds for 0.7.x, not beyond); None where none is, or `version` names no
    release."""
    at = engine_release(version) if version else None
    if at is None:
        return None
    name = engine_name(engine)
    return next((f for f in facts if f.engine == name and engine_release(f.version)[:2] == at[:2]), None)


def _release_match(value) -> "re.Match | None":
    """_RELEASE over the whole of `value` stripped, None where it is no release in form (or not a string of at most
    64 characters)."""
    return _RELEASE.fullmatch(value.strip()) if isinstance(value, str) and len(value) <= 64 else None


def check_engine_release(value, what: str = "engine version (--engine-version)", engine=None) -> str:
    """`value` stripped, if it is a string naming a release (0.9.0, v0.7.4.dev181, 0.4.3.post2; each number below
    RELEASE_PART_LIMIT) or an engine generation (v1: vLLM's, so refused where `engine`, an Engine, is another);
    else an InputError naming `what`."""
    from .errors import InputError, shown

    text = value.strip() if isinstance(value, str) and len(value) <= 64 else None
    if engine is not None and engine is not Engine.vllm and text is not None and text.lower() in _GENERATIONS:
        raise InputError(f"{what}: {shown(value)} is vLLM's V1 engine, not a {engine.value} release (0.4.3.post2, "
                         f"1.0, ...)")
    match = _release_match(value)
    if match is None and (text is None or text.lower() not in _GENERATIONS):
        raise InputError(f"{what}: {shown(value)} is not an engine release (0.9.0, 0.7.4.dev181, 0.4.3.post2)")
    if match is not None and any(int(n) >= RELEASE_PART_LIMIT for n in match.group(1).split(".")):
        raise InputError(f"{what}: {shown(value)} is not an engine release: each of its numbers is below "
                         f"{RELEASE_PART_LIMIT:,}")
    return text


def release_of(value, what: str = "engine version (--engine-version)", engine=None) -> "tuple[int, ...] | None":
    """check_engine_release, then the release's numbers (engine_release): one reading for the check and the
    numbers; None for vLLM's generation word (v1)."""
    return engine_release(check_engine_release(value, what, engine))


__all__ = ["ENGINE_RELEASES", "EXPLAINED", "RELEASE_PART_LIMIT", "check_engine_release", "engine_release",
           "release_of", "Bound", "CeilingSource", "Engine", "ExplainedVariant", "Kernel", "KernelFamily", "LayerKind", "PeerTransport", "Phase",
           "Pipe", "StepKind", "Variant", "WindowAllocation"]
