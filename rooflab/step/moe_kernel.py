"""Which kernel an engine runs a MoE layer's experts with, as a closed set of priced models (MoeKernel), and the
facts, read from the engines' shipped source, that pick one for an engine at a version (engine_moe_kernel).

    tuned            a tuned fused / grouped kernel: vLLM's and SGLang's Triton fused_moe with a tuned config file
                     for the shape (E, N, device, dtype, block). Priced as the dense cuBLAS GEMM fit
                     (torch_cublas) on the experts' whole work in one launch: 2 P n k FLOPs over the touched
                     experts' weights read once (the pricing before the grouped fit). The assumption: a tuned
                     expert kernel reaches cuBLAS's efficiency on the same FLOPs and bytes; for the block-fp8
                     kernel below, our measurement says it does not
    fused_block_fp8  the same Triton fused_moe over block-fp8 experts ([128, 128] scales) at the tuned config the
                     release shipped, where its kernel was read (vLLM 0.7.3, SGLang 0.4.3.post2): priced by our own
                     kernel of that algorithm at that config, measured on the H200 (c0 + Q / B + tiles tau,
                     rooflab.predict.fused_moe_time: hardware/h200-sxm.yaml's gemm / triton_fused_moe entry, fitted
                     by rooflab.fit.moe_fit.fit_fused on measurements/moe/h200-fused-moe-block-fp8.csv), never
                     faster than `tuned` (all 26 measured launches ran 6-196% slower than tuned's price of the same
                     work: Pricer.fused_time), up to the 512 tokens a step measured (the entry's max_tokens:
                     memory-bound launches); past them, on a GPU with no such fit, or in other arithmetic: priced
                     as `tuned`, noted
    torch_grouped    torch._grouped_mm / torch._scaled_grouped_mm, the grouped-GEMM fit measured on the H200
                     (rooflab.fit.moe_fit; measurements/moe/h200-moe-gemm.csv)
    default_config   fused_moe on its default tile config (no tuned file: the engine logs "Using default MoE config.
                     Performance might be sub-optimal!"). rooflab has no measurement of that kernel, so it is priced
                     as torch_grouped: an assumption, said in the row's source

Facts (CONFIG_FACTS): whether the engine's release shipped the tuned config file the shape looks up, read from its
wheel on PyPI (the file list under the config folder). An engine at a version at or after a release that shipped the
file runs the fact's kernel, `fused_block_fp8` where the release's block-fp8 kernel was read (within that release's
minor line, 0.7.x / 0.4.x: the kernel read is assumed kept there, not beyond), else `tuned` (a shipped config is
assumed kept until a later release read says otherwise: SGLang moved its files into triton_<version>/ folders and
falls back to another Triton version's file, fused_moe_triton_config.py get_moe_configs); at or before a release
that did not ship it, `default_config`; between or unknown (no version, a shape no fact covers, TensorRT-LLM's own MoE
plugin, whose releases were not read): torch_grouped, the step's documented default (DEFAULT_MOE_KERNEL).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..errors import shown
from ..units import DType, WeightFormat
from ..vocab import _Named, engine_release


class MoeKernel(_Named):
    """How the step prices a MoE layer's expert GEMMs (a model of the engine's expert kernel)."""

    tuned = "tuned"                      # tuned fused / grouped kernel: the dense cuBLAS fit on the experts' work
    fused_block_fp8 = "fused_block_fp8"  # Triton fused_moe, block fp8, shipped config: our kernel's H200 fit
    torch_grouped = "torch_grouped"      # torch's grouped GEMM: the measured grouped-GEMM fit
    default_config = "default_config"    # fused_moe on its default config: priced as torch_grouped (assumed)


#: The step's expert kernel where no engine (or no fact) picks one: the kernel measured on the H200.
DEFAULT_MOE_KERNEL = MoeKernel.torch_grouped


@dataclass(frozen=True)
class ConfigFact:
    """Whether `engine`'s release `version` shipped the tuned fused_moe config file `file` for rooflab GPU `gpu`."""

    engine: str                          # vllm, sglang
    version: str                         # the release read
    gpu: str                             # rooflab's GPU name (the engine's device_name is in `file`)
    file: str                            # the config file the engine looks up (its get_config_file_name)
    shipped: bool
    source: str                          # where it was read
    kernel: "MoeKernel" = MoeKernel.tuned    # the model a shipped file implies: fused_block_fp8 where the kernel
                                             # that reads it was read at this release (block fp8), else tuned

    @property
    def experts(self) -> int:
        return int(re.search(r"E=(\d+)", self.file).group(1))

    @property
    def width(self) -> int:
        return int(re.search(r",N=(\d+)", self.file).group(1))

    @property
    def dtype(self) -> str:
        match = re.search(r"dtype=([a-z0-9_]+)", self.file)
        return match.group(1) if match else ""

    @property
    def block(self) -> bool:
        return "block_shape=" in self.file


_VLLM = "vllm/model_executor/layers/fused_moe/configs/"
_SG043 = "sglang/srt/layers/moe/fused_moe_triton/configs/"
_SG0512 = "sglang/srt/layers/moe/moe_runner/triton_utils/configs/triton_3_1_0/"
_WHEEL = "the {0} {1} wheel on PyPI ({2}), {3}"
_FUSED = ("; its kernel ({0} fused_moe_kernel, block-fp8 path) read at this release: BLOCK_M 64, BLOCK_N 128, "
          "BLOCK_K 128 at 24 to 2048 tokens, the same config for gate/up and down")

#: The facts, one a (release, config file): the file lists of the engines' wheels. vLLM's files: E (experts a
#: rank), N = the expert's intermediate size a rank (w2's shape[2]), device_name = torch's name with "_", dtype
#: fp8_w8a8 for fp8 weights, block_shape for block-quantised ones (fused_moe.py get_config_file_name); SGLang's the
#: same names with "[128, 128]".
CONFIG_FACTS = (
    ConfigFact("vllm", "0.6.3.post1", "h200-sxm", "E=8,N=7168,device_name=NVIDIA_H200.json", False,
               _WHEEL.format("vllm", "0.6.3.post1", "vllm-0.6.3.post1-cp38-abi3-manylinux1_x86_64.whl", _VLLM)
               + ": Mixtral's TP 2 bf16 shape has H100 and A100 files only"),
    ConfigFact("vllm", "0.7.3", "h200-sxm", "E=8,N=7168,device_name=NVIDIA_H200.json", False,
               _WHEEL.format("vllm", "0.7.3", "vllm-0.7.3-cp38-abi3-manylinux1_x86_64.whl", _VLLM)
               + ": Mixtral's TP 2 bf16 shape still has no H200 file"),
    ConfigFact("vllm", "0.7.3", "h200-sxm",
               "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json", True,
               _WHEEL.format("vllm", "0.7.3", "vllm-0.7.3-cp38-abi3-manylinux1_x86_64.whl", _VLLM)
               + _FUSED.format("vllm/model_executor/layers/fused_moe/fused_moe.py"), MoeKernel.fused_block_fp8),
    ConfigFact("sglang", "0.4.3.post2", "h200-sxm",
               "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json", True,
               _WHEEL.format("sglang", "0.4.3.post2", "sglang-0.4.3.post2-py3-none-any.whl", _SG043)
               + _FUSED.format("sglang/srt/layers/moe/fused_moe_triton/fused_moe.py"), MoeKernel.fused_block_fp8),
    ConfigFact("sglang", "0.4.3.post2", "h200-sxm", "E=8,N=7168,device_name=NVIDIA_H200.json", True,
               _WHEEL.format("sglang", "0.4.3.post2", "sglang-0.4.3.post2-py3-none-any.whl", _SG043)),
    ConfigFact("sglang", "0.5.12", "h200-sxm",
               "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json", True,
               _WHEEL.format("sglang", "0.5.12", "sglang-0.5.12-cp311-cp311-manylinux_2_34_x86_64.whl", _SG0512)
               + " (E=257, the shared expert fused, in triton_3_2_0/, triton_3_3_1/ and triton_3_5_1/ too); "
                 "at EP 1 the auto MoE runner is Triton (quantization/fp8.py Fp8MoEMethod.create_moe_runner: "
                 "DeepGEMM only with a DeepEP, Mooncake or NIXL all-to-all); with the shared expert fused "
                 "(rooflab.step.routing fused_topk_shared) it looks up E=257, which triton_3_6_0/ lacks, so "
                 "get_moe_configs falls back newest-first (fused_moe_triton_config.py:96-122) to triton_3_5_1/'s: "
                 "BLOCK_M 16, BLOCK_N 64, BLOCK_K 128 for gate/up at 1 to 128 tokens and its own _down.json "
                 "(16, 128, 128), not the 64 x 128 x 128 config the fused_block_fp8 fit measured: tuned"),
    ConfigFact("sglang", "0.5.12", "h200-sxm", "E=8,N=7168,device_name=NVIDIA_H200.json", True,
               _WHEEL.format("sglang", "0.5.12", "sglang-0.5.12-cp311-cp311-manylinux_2_34_x86_64.whl", _SG0512)),
)

#: TensorRT-LLM runs its own MoE plugin; at one stored commit (1a43c7d6, release not known) it picks its CUTLASS
#: grouped-GEMM tactic per shape with a profiler (cpp/tensorrt_llm/plugins/mixtureOfExperts/mixtureOfExpertsPlugin.h,
#: MixtureOfExpertsGemmProfiler). No release's source was read, so no fact picks a kernel for it: the default.
TRTLLM_WHY = ("TensorRT-LLM's own MoE plugin: no release's source read (a profiler of CUTLASS tactics at one stored "
              "commit of unknown release): the step's default")
_TRTLLM = ("tensorrt-llm", "trtllm", "trt-llm")


#: A version's release numbers, or None (rooflab.vocab.engine_release: the one parser).
release = engine_release


def _line(version) -> str:
    """A release's line ('0.7.3' -> '0.7.x')."""
    return ".".join(str(n) for n in release(version)[:2]) + ".x"


def _engine(engine) -> str:
    text = str(getattr(engine, "value", engine) or "").strip().lower().replace("_", "-")
    return "tensorrt-llm" if text in _TRTLLM else text


def expert_shape(model, tensor_parallel: int, expert_parallel: int = 1,
                 arithmetic: Optional[DType] = None) -> tuple[int, int, str, bool]:
    """(E, N, dtype, block) of the config file a rank's experts look up: E / EP experts, N = ffn / (TP / EP) (the
    experts' tensor parallelism), dtype fp8_w8a8 for fp8 arithmetic ('' otherwise), block for block-fp8 weights."""
    etp = max(1, tensor_parallel // max(1, expert_parallel))
    fp8 = arithmetic is not None and arithmetic.is_fp8
    block = fp8 and model.weight_format("experts") is WeightFormat.fp8_block
    return model.num_experts // max(1, expert_parallel), model.ffn_size // etp, "fp8_w8a8" if fp8 else "", block


def moe_kernel_fact(engine, version, model, gpu_name: str, tensor_parallel: int = 1, expert_parallel: int = 1,
                    arithmetic: Optional[DType] = None) -> tuple[MoeKernel, str]:
    """(the expert kernel `engine` at `version` runs for `model`'s experts on `gpu_name`, why: the fact's source)."""
    name = _engine(engine)
    if name == "tensorrt-llm":
        return DEFAULT_MOE_KERNEL, TRTLLM_WHY
    if not getattr(model, "num_experts", 0):
        return DEFAULT_MOE_KERNEL, "a dense model"
    at = release(version)
    if at is None:
        return DEFAULT_MOE_KERNEL, f"no release in the engine version {shown(version)}: the step's default"
    key = expert_shape(model, tensor_parallel, expert_parallel, arithmetic)
    facts = [f for f in CONFIG_FACTS if f.engine == name and f.gpu == gpu_name
             and (f.experts, f.width, f.dtype, f.block) == key]
    shipped = sorted((f for f in facts if f.shipped and release(f.version) <= at), key=lambda f: release(f.version))
    if shipped:                                                  # the latest release read at or before `version`
        fact = shipped[-1]
        why = f"{name} {fact.version} shipped {fact.file}: {fact.source}"
        if fact.kernel is MoeKernel.fused_block_fp8 and at[:2] != release(fact.version)[:2]:
            return MoeKernel.tuned, why + f"; its kernel was read in the {_line(fact.version)} line only: tuned"
        return fact.kernel, why
    missing = sorted((f for f in facts if not f.shipped and release(f.version) >= at), key=lambda f: release(f.version))
    if missing:                                                  # the earliest release read at or after it
        first = missing[0]
        return MoeKernel.default_config, f"{name} {first.version} shipped no {first.file}: {first.source}"
    return DEFAULT_MOE_KERNEL, f"no fact read for {name} {version} at this shape: the step's default"


def engine_moe_kernel(engine, version, model, gpu_name: str, tensor_parallel: int = 1, expert_parallel: int = 1,
                      arithmetic: Optional[DType] = None) -> MoeKernel:
    """The expert kernel `engine` at `version` runs (moe_kernel_fact without the reason)."""
    return moe_kernel_fact(engine, version, model, gpu_name, tensor_parallel, expert_parallel, arithmetic)[0]


def moe_kernel_of(value) -> MoeKernel:
    """A MoeKernel from itself or its name, else an InputError naming the choices."""
    return MoeKernel.of(value, "MoE kernel")


__all__ = ["CONFIG_FACTS", "DEFAULT_MOE_KERNEL", "ConfigFact", "MoeKernel", "engine_moe_kernel", "expert_shape",
           "moe_kernel_fact", "moe_kernel_of", "release"]
