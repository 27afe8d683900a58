"""Typed, frozen descriptions of a GPU and a model.

Specs are data: every figure comes from a YAML file (see load.py), with a
`source`. Derived values are properties. Validation of types and signs is done
by load.py from the field annotations; the cross-field rules live here in
`check()` and raise SpecError naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from .errors import InputError, SpecError
from .fields import spec_field, validate_fields
from .units import RATE_KEYS, DType


_GB = 1e9
_T = 1e12


@dataclass(frozen=True)
class MeasuredCeilings:
    """Ceilings measured on a real device by `rooflab calibrate` (the Empirical Roofline Toolkit's way).

    copy_bytes_per_s counts bytes read plus bytes written of a large device-to-device copy.
    gemm_flop_per_s holds dense GEMM rates on random data, keyed like dense_tensor_flop_per_s.
    """

    copy_bytes_per_s: float = spec_field(1 * _GB, 100 * _T, "B/s", "device-to-device copy, bytes read + written")
    gemm_flop_per_s: dict[str, float] = spec_field(0.1 * _T, 1e5 * _T, "FLOP/s", "dense GEMM rate on random data",
                                                   keys=RATE_KEYS)
    date: str = spec_field(doc="when it was measured")
    device_name: str = spec_field(doc="the device's own name (nvidia-smi)")
    exp_per_s: Optional[float] = spec_field(1e9, 1e17, "exp/s", "measured exp throughput", default=None)
    driver: Optional[str] = spec_field(default=None)
    cuda: Optional[str] = spec_field(default=None)
    cupy: Optional[str] = spec_field(default=None)
    command: Optional[str] = spec_field(default=None)

    def __post_init__(self) -> None:
        validate_fields(self)


@dataclass(frozen=True)
class GpuSpec:
    """One GPU: datasheet ceilings (dense, never the sparsity figures) and on-chip sizes.

    `units_per_sm` is the parallelism model's work units one SM runs at once for rooflab's decode
    kernels (cost/parallel.py): the value `rooflab validate` fitted to the paged and split-KV kernels
    on this GPU where the YAML records one, else 1 (one thread block an SM streams at beta / num_sms).
    Every field is checked on construction (fields.py): type, and a range no real GPU falls outside.
    """

    name: str = spec_field(doc="short name, as `--gpu` takes it")
    display_name: str = spec_field(doc="the name people know it by")
    vendor: str = spec_field()
    architecture: str = spec_field()
    hbm_capacity_bytes: int = spec_field(100e6, 100e12, "bytes", "device memory (HBM), total")
    hbm_bandwidth_bytes_per_s: float = spec_field(1 * _GB, 100 * _T, "B/s", "datasheet HBM bandwidth")
    dense_tensor_flop_per_s: dict[str, float] = spec_field(0.1 * _T, 1e5 * _T, "FLOP/s",
                                                           "dense (not 2:4 sparse) matrix rates", keys=RATE_KEYS)
    vector_fp32_flop_per_s: float = spec_field(0.01 * _T, 1e4 * _T, "FLOP/s", "plain fp32 FMA rate (non-tensor)")
    num_sms: int = spec_field(1, 100_000, "SMs", "streaming multiprocessors (compute units)")
    smem_per_sm_bytes: int = spec_field(1024, 1 << 30, "bytes", "shared memory per SM")
    l2_bytes: int = spec_field(1024, 1 << 36, "bytes", "last-level (L2) cache")
    register_file_per_sm_bytes: int = spec_field(1024, 1 << 30, "bytes")
    boost_clock_hz: float = spec_field(10e6, 100e9, "Hz")
    source: str = spec_field(doc="where the figures come from")
    exp_per_s: Optional[float] = spec_field(1e9, 1e17, "exp/s", "special-function (exp) rate", default=None)
    interconnect_bytes_per_s: Optional[float] = spec_field(1e6, 100 * _T, "B/s", default=None)
    compute_capability: Optional[str] = spec_field(default=None)
    units_per_sm: float = spec_field(0, 64, "", "decode work units one SM runs at once (fitted)", default=1.0,
                                     lo_open=True)
    measured: Optional[MeasuredCeilings] = None

    #: YAML keys read under their old spelling: old -> new.
    RENAMED: ClassVar[dict[str, str]] = {"decode_units_per_sm": "units_per_sm"}

    def __post_init__(self) -> None:
        validate_fields(self)
        self.check()

    def check(self) -> None:
        """Cross-field rules the annotations cannot express."""
        if "fp16" not in self.dense_tensor_flop_per_s:
            raise SpecError(self.name, "dense_tensor_flop_per_s", self.dense_tensor_flop_per_s,
                            "must give at least the fp16 rate")

    def has_rate(self, dtype: DType) -> bool:
        return dtype.rate_key in self.dense_tensor_flop_per_s or dtype is DType.fp32

    def matmul_flop_per_s(self, dtype: DType) -> float:
        """Datasheet rate for matrix products with operands in `dtype`.

        fp32 operands fall back to the non-tensor fp32 rate when the chip has no fp32 matrix rate.
        """
        rate = self.dense_tensor_flop_per_s.get(dtype.rate_key)
        if rate is not None:
            return rate
        if dtype is DType.fp32:
            return self.vector_fp32_flop_per_s
        raise SpecError(self.name, "dense_tensor_flop_per_s", sorted(self.dense_tensor_flop_per_s),
                        f"this GPU has no {dtype.value} tensor-core rate")

    def ridge_flop_per_byte(self, dtype: DType) -> float:
        """Intensity at which the compute roof meets the memory roof: pi / beta."""
        return self.matmul_flop_per_s(dtype) / self.hbm_bandwidth_bytes_per_s


@dataclass(frozen=True)
class AttentionHeads:
    """The head layout one attention layer needs: query heads, KV heads, head dim."""

    num_qo_heads: int = spec_field(1, 1 << 16, "heads")
    num_kv_heads: int = spec_field(1, 1 << 16, "heads")
    head_dim: int = spec_field(1, 1 << 16)

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.num_qo_heads % self.num_kv_heads:
            raise SpecError("attention heads", "num_kv_heads", self.num_kv_heads,
                            f"num_qo_heads ({self.num_qo_heads}) must be a multiple of num_kv_heads")

    @property
    def group_size(self) -> int:
        """Query heads served by one KV head (GQA); 1 for multi-head attention."""
        return self.num_qo_heads // self.num_kv_heads

    def kv_bytes_per_token(self, kv_dtype: DType) -> int:
        """K and V of one token in one layer: 2 * h_kv * d * b."""
        return 2 * self.num_kv_heads * self.head_dim * kv_dtype.bytes

    def shard(self, tensor_parallel: int) -> AttentionHeads:
        """The heads one GPU holds when the layer is split `tensor_parallel` ways by head.

        Query heads divide evenly: h / tp each. KV heads divide too while tp <= h_kv; past
        that every GPU keeps one whole KV head, so each KV head is replicated tp / h_kv times
        (the Megatron / vLLM rule, which needs tp to be a multiple of h_kv there).
        """
        tp = tensor_parallel
        if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
            raise InputError(f"tensor parallel size must be a whole number >= 1, got {tp!r}")
        if self.num_qo_heads % tp:
            raise InputError(f"tensor parallel size {tp} does not divide the {self.num_qo_heads} query heads")
        if tp <= self.num_kv_heads and self.num_kv_heads % tp:
            raise InputError(f"tensor parallel size {tp} does not divide the {self.num_kv_heads} KV heads")
        if tp > self.num_kv_heads and tp % self.num_kv_heads:
            raise InputError(f"tensor parallel size {tp} is not a multiple of the {self.num_kv_heads} KV heads, "
                             "so they cannot be replicated evenly")
        return AttentionHeads(self.num_qo_heads // tp, max(1, self.num_kv_heads // tp), self.head_dim)


@dataclass(frozen=True)
class ModelSpec:
    """One decoder-only transformer, as its config.json describes it."""

    name: str = spec_field(doc="short name, as `--model` takes it")
    display_name: str = spec_field()
    num_layers: int = spec_field(1, 100_000, "layers")
    hidden_size: int = spec_field(1, 1 << 20)
    num_qo_heads: int = spec_field(1, 1 << 16, "heads", "query (and output) heads")
    num_kv_heads: int = spec_field(1, 1 << 16, "heads", "key/value heads (GQA: fewer than query heads)")
    head_dim: int = spec_field(1, 1 << 16)
    ffn_size: int = spec_field(1, 1 << 24, doc="MLP intermediate size (per expert)")
    vocab_size: int = spec_field(1, 1 << 28)
    max_context_len: int = spec_field(1, 1 << 31, "tokens")
    source: str = spec_field(doc="where the figures come from")
    num_parameters: Optional[int] = spec_field(1, 1e16, "parameters", "the published count", default=None)
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    num_experts: int = spec_field(1, 1 << 20, "experts", default=1)
    num_experts_per_token: int = spec_field(1, 1 << 20, "experts", default=1)

    def __post_init__(self) -> None:
        validate_fields(self)
        self.check()

    def check(self) -> None:
        """Cross-field rules the annotations cannot express."""
        if self.num_qo_heads % self.num_kv_heads:
            raise SpecError(self.name, "num_kv_heads", self.num_kv_heads,
                            f"num_qo_heads ({self.num_qo_heads}) must be a multiple of num_kv_heads")
        if self.num_experts_per_token > self.num_experts:
            raise SpecError(self.name, "num_experts_per_token", self.num_experts_per_token,
                            f"cannot exceed num_experts ({self.num_experts})")

    @property
    def heads(self) -> AttentionHeads:
        return AttentionHeads(self.num_qo_heads, self.num_kv_heads, self.head_dim)

    @property
    def group_size(self) -> int:
        """Query heads served by one KV head (GQA); 1 for multi-head attention."""
        return self.heads.group_size

    def weight_bytes(self, dtype: DType, tensor_parallel: int = 1) -> int:
        """Bytes of every parameter (all experts) in `dtype`, per GPU when split `tensor_parallel` ways
        (rounded up; norms and embeddings are counted as split too, a few hundred MB at most)."""
        return -(-self.total_parameters * dtype.bytes // tensor_parallel)

    def kv_bytes_per_token(self, kv_dtype: DType, tensor_parallel: int = 1) -> int:
        """K and V of one token across all layers, on one GPU of `tensor_parallel`: 2 * L * h_kv/tp * d * b."""
        return self.num_layers * self.heads.shard(tensor_parallel).kv_bytes_per_token(kv_dtype)

    @property
    def derived_parameters(self) -> int:
        """Parameter count from the architecture (gated MLP, RMSNorm), all experts included."""
        return self._parameters(self.num_experts)

    @property
    def total_parameters(self) -> int:
        """The published count when the YAML gives one, otherwise the derived count."""
        return self.num_parameters if self.num_parameters is not None else self.derived_parameters

    @property
    def active_parameters(self) -> int:
        """Parameters touched per token: for a mixture of experts only the routed experts' MLPs count."""
        if self.num_experts == 1:
            return self.total_parameters
        inactive = (self.num_experts - self.num_experts_per_token) * self.expert_parameters
        return self.total_parameters - self.num_layers * inactive

    @property
    def expert_parameters(self) -> int:
        """Parameters of one gated MLP (one expert of a mixture): gate, up and down, 3 x hidden x ffn."""
        return 3 * self.hidden_size * self.ffn_size

    def _parameters(self, experts: int) -> int:
        h, d = self.hidden_size, self.head_dim
        q_out = self.num_qo_heads * d
        kv_out = self.num_kv_heads * d
        attention = h * q_out + 2 * h * kv_out + q_out * h
        if self.attention_bias:
            attention += q_out + 2 * kv_out
        router = h * experts if experts > 1 else 0
        per_layer = attention + experts * self.expert_parameters + router + 2 * h  # 2 norms
        embeddings = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        return self.num_layers * per_layer + embeddings + h  # final norm

