"""The deployment options every command shares, in rooflab's and the engines' spellings, and `words_of`.

A command declares the settings it takes with these types and names its parameters after the
`DeploymentWords` fields (rooflab/deployment_words.py: which name is whose, and how two names of one
setting agree); `words_of(ctx)` collects the ones given on the command line, and
`DeploymentWords.resolve` makes the one `Deployment`:

    def serve(ctx: typer.Context, tensor_parallel: TensorParallelOpt = None,
              tensor_parallel_size: TensorParallelSizeOpt = None, page_size: PageSizeOpt = None,
              block_size: BlockSizeOpt = None, ...):
        deployment, given, kv = words_of(ctx).resolve(engine=...)

Values are checked here at parse time (counts in range, fractions in (0, 1], names in the one dtype
vocabulary), so a bad value is a usage error naming the option; `resolve` checks again for callers that
build DeploymentWords themselves.
"""

from typing import Annotated, Optional

import typer

from ..deployment_words import DeploymentWords
from ..errors import InputError
from ..limits import MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from ..units import DType, WeightFormat
from . import params


def _checked(check, metavar: str):
    """A parser that keeps the text (stripped) once `check(text)` accepts it; its InputError a usage error."""

    def parse(text: str) -> str:
        if not isinstance(text, str):
            return text
        if len(text) > 64:
            raise typer.BadParameter(f"a name of at most 64 characters, got {len(text):,}")
        try:
            check(text.strip())
        except InputError as exc:
            raise typer.BadParameter(str(exc)) from None
        return text.strip()

    parse.__name__ = metavar
    return parse


def _kv_cache_name(text: str) -> None:
    from ..engines.vocab import parse_kv_cache_dtype

    parse_kv_cache_dtype(text)


def weights():
    """The parser of a name of the weights setting (--weight-dtype, --quantization, -q): the one vocabulary
    (deployment_words.weights_name; click names the option); the text is kept for DeploymentWords."""
    from ..deployment_words import weights_name

    return _checked(lambda text: weights_name(text, ""), "FORMAT")


def _state_dtype(text: str) -> None:
    from ..engines.request import parse_state_dtype

    parse_state_dtype(text)


TensorParallelOpt = Annotated[Optional[int], typer.Option(
    "--tp", "--tensor-parallel", parser=params.count(1, MAX_GPUS), metavar="N",
    help="Tensor-parallel GPUs (heads and weights split N ways; memory figures per GPU; default 1).")]
TensorParallelSizeOpt = Annotated[Optional[int], typer.Option(
    "--tensor-parallel-size", "-tp", "--tp-size", parser=params.count(1, MAX_GPUS), metavar="N",
    help="--tp as vLLM (--tensor-parallel-size, -tp) and SGLang (--tp-size) spell it.")]
DecodeContextParallelOpt = Annotated[int, typer.Option(
    "--dcp", "-dcp", "--decode-context-parallel-size", "--dcp-size", parser=params.count(1, MAX_GPUS), metavar="N",
    help="Decode context parallelism as vLLM and SGLang mean it: each sequence's KV split by position over N GPUs of "
         "the TP group (N divides --tp, N <= TP / KV heads); no extra GPUs. rooflab 0.1's --dcp is --kv-parallel.")]
KvParallelOpt = Annotated[int, typer.Option(
    "--kv-parallel", "--kvp", parser=params.count(1, MAX_GPUS), metavar="N",
    help="KV parallelism (Helix): each sequence's KV split by position over N groups of --tp GPUs, weights on every "
         "one: N x TP GPUs.")]
PageSizeOpt = Annotated[Optional[int], typer.Option(
    "--page-size", parser=params.count(1, MAX_PAGE_SIZE), metavar="N",
    help="Tokens per KV-cache page (block; SGLang's --page-size; default 16).")]
BlockSizeOpt = Annotated[Optional[int], typer.Option(
    "--block-size", parser=params.count(1, MAX_PAGE_SIZE), metavar="N", help="--page-size as vLLM spells it.")]
KvDTypeOpt = Annotated[Optional[str], typer.Option(
    "--kv-dtype", parser=_checked(lambda t: DType.or_auto(t, "the KV dtype"), "DTYPE"), metavar="DTYPE",
    help="Element type of the KV cache: auto (the default: the model's dtype as served), fp8 (= fp8_e4m3), "
         "fp8_e5m2, bf16 (bfloat16), fp16 (float16, half), fp32 (float32).")]
KvCacheDTypeOpt = Annotated[Optional[str], typer.Option(
    "--kv-cache-dtype", parser=_checked(_kv_cache_name, "NAME"), metavar="NAME",
    help="--kv-dtype as vLLM and SGLang spell it: auto, fp8 (= fp8_e4m3; SGLang refuses it), fp8_e5m2, "
         "fp8_e4m3, fp8_ds_mla, bfloat16, float16.")]
DTypeAutoOpt = Annotated[Optional[DType], typer.Option(
    "--dtype", parser=params.dtype(auto=True), metavar="DTYPE",
    help="Element type of activations, Q, K, V and the arithmetic: auto (the checkpoint's dtype as vLLM loads it "
         "on this GPU: fp32 checkpoints in bf16 from compute capability 8.0), fp16 (float16, half), bf16 "
         "(bfloat16), fp32 (float32), tf32, fp8_e4m3 (fp8), fp8_e5m2.")]
UtilizationOpt = Annotated[Optional[float], typer.Option(
    "--gpu-memory-utilization", parser=params.number(0, 1, lo_open=True), metavar="X",
    help="Share of device memory for weights and KV cache, in (0, 1] (default 0.9).")]
MemFractionStaticOpt = Annotated[Optional[float], typer.Option(
    "--mem-fraction-static", parser=params.number(0, 1, lo_open=True), metavar="X",
    help="--gpu-memory-utilization as SGLang spells it.")]
WeightDTypeOpt = Annotated[Optional[str], typer.Option(
    "--weight-dtype", parser=weights(), metavar="FORMAT",
    help="Format of the linear layers' weights: auto (as the checkpoint ships them, the default), a dtype (bf16, "
         "fp8 = fp8_e4m3, ...), fp8_block, mxfp4, nvfp4, int4_g128[_zp], nf4[_dq], or a quantised checkpoint's "
         "method as -q; embeddings, LM head, norms and router stay in the checkpoint's dtype.")]
QuantizationOpt = Annotated[Optional[str], typer.Option(
    "--quantization", "-q", parser=weights(), metavar="METHOD",
    help="The engines' --quantization: awq, gptq, bitsandbytes, compressed-tensors, modelopt, mxfp4, fp8, ... "
         "name the checkpoint's own quantization_config method (weights as shipped); on an unquantised "
         "checkpoint fp8 (mxfp4, and every --weight-dtype format) quantises at load.")]
MaxModelLenOpt = Annotated[Optional[int], typer.Option(
    "--max-model-len", parser=params.count(1, MAX_TOKENS), metavar="N",
    help="Longest request (vLLM's --max-model-len; default: as vLLM derives it from the model's config).")]

MambaSsmDTypeOpt = Annotated[Optional[str], typer.Option(
    "--mamba-ssm-dtype", "--mamba-ssm-cache-dtype", parser=_checked(_state_dtype, "DTYPE"), metavar="DTYPE",
    help="Engine, linear-attention models: the recurrent state's dtype, float32, bfloat16 or float16 (vLLM); "
         "SGLang's --mamba-ssm-dtype (default float32), vLLM's --mamba-ssm-cache-dtype (default: the model's).")]

DataParallelOpt = Annotated[Optional[int], typer.Option(
    "--dp", "-dp", "--data-parallel-size", "--dp-size", parser=params.count(1, MAX_GPUS), metavar="N",
    help="Data-parallel ranks: vLLM's --data-parallel-size (replicas, each its own KV cache), or with "
         "--enable-dp-attention SGLang's attention DP inside --tp.")]
EnableDpAttentionOpt = Annotated[bool, typer.Option(
    "--enable-dp-attention", help="SGLang: --dp is data-parallel attention inside the TP group (each rank whole "
                                  "KV heads over TP / DP GPUs).")]
EnableExpertParallelOpt = Annotated[bool, typer.Option(
    "--enable-expert-parallel", help="vLLM's switch (MoE): experts split over EP = TP x DP GPUs, whole.")]
PipelineParallelOpt = Annotated[int, typer.Option(
    "--pp", "-pp", "--pipeline-parallel-size", "--pp-size", parser=params.count(1, MAX_GPUS), metavar="N",
    help="Pipeline stages (the layers split N ways).")]
EagerOpt = Annotated[bool, typer.Option(
    "--enforce-eager", "--disable-cuda-graph", help="No CUDA graphs (vLLM's --enforce-eager, SGLang's "
    "--disable-cuda-graph): the step's launches at their eager issue times.")]


def _engine(text: str) -> None:
    from ..vocab import Engine

    Engine.of(text, "--engine")


def _release(text: str) -> None:
    from ..vocab import check_engine_release

    check_engine_release(text, "--engine-version")


StepEngineOpt = Annotated[Optional[str], typer.Option(
    "--engine", parser=_checked(_engine, "engine"), metavar="vllm|sglang|tensorrt-llm",
    help="Step: price the decode attention and the experts as this engine's kernels at --engine-version "
         "(default: rooflab's own step).")]
EngineVersionOpt = Annotated[Optional[str], typer.Option(
    "--engine-version", parser=_checked(_release, "release"), metavar="V",
    help="The engine's release (0.9.0) whose kernels price the step: TensorRT-LLM before 0.10 reads a GQA "
         "group's KV once per query head outside XQA; vLLM and SGLang's expert kernel by the tuned configs the "
         "release shipped (default: vllm v1 (0.11+), sglang 0.5, tensorrt-llm 1.0).")]


def parallel_degrees(tp: int, dp: Optional[int], dp_attention: bool, enable_ep: bool,
                     ep: int) -> tuple[int, int, int]:
    """(data parallel, attention data parallel, expert parallel) as the engines' switches set them: vLLM's
    --enable-expert-parallel makes EP = TP x DP; SGLang's --enable-dp-attention makes --dp attention DP inside TP
    (without --dp, DP = TP, as SGLang's recipes run it; one attention rank is refused: capacity.weight_split.ONE_RANK);
    --ep N sets EP directly (SGLang's --ep-size). `rooflab capacity` and the step (report / explain) map them here."""
    from ..capacity.weight_split import ONE_RANK

    if enable_ep and ep > 1:
        raise typer.BadParameter("--enable-expert-parallel sets EP = TP x DP (vLLM); --ep N sets it (SGLang): "
                                 "give one")
    if dp_attention:
        attention = dp or tp
        if attention == 1:
            raise typer.BadParameter(f"--enable-dp-attention {'--dp 1' if dp else 'under --tp 1'} {ONE_RANK}")
        return 1, attention, tp if enable_ep else ep
    replicas = dp or 1
    return replicas, 1, tp * replicas if enable_ep else ep


def check_ep_spelling(engine: Optional[str], ep: int, enable_ep: bool = False) -> None:
    """--ep N is SGLang's --ep-size; vLLM has no EP size (--enable-expert-parallel makes EP = TP x DP): refused
    under --engine vllm, naming vLLM's switch (as SGLang's --enable-dp-attention is refused there); vLLM's switch
    under --engine sglang, naming --ep-size."""
    from ..vocab import Engine

    if engine and ep > 1 and Engine.of(engine, "--engine") is Engine.vllm:
        raise typer.BadParameter(f"--ep {ep} is SGLang's --ep-size; vLLM sets no EP size: its "
                                 "--enable-expert-parallel makes EP = TP x DP (give that, or --engine sglang)")
    if engine and enable_ep and Engine.of(engine, "--engine") is Engine.sglang:     # sglang 0.5.12 server_args.py
        raise typer.BadParameter("--enable-expert-parallel is vLLM's switch; SGLang sets the EP size: "   # :5986-5987
                                 "--ep-size N (give that, or --engine vllm)")


def words_of(ctx: typer.Context) -> DeploymentWords:
    """The DeploymentWords the user typed: each field from the command's parameter of the same name, where that
    parameter was given on the command line (defaults are not words: the engines' defaults apply)."""
    values = {}
    for name in DeploymentWords.__dataclass_fields__:
        if name in ctx.params and ctx.get_parameter_source(name).name == "COMMANDLINE":
            value = ctx.params[name]
            if value is None and name in ("dtype", "kv_dtype", "weight_dtype"):
                value = "auto"                      # the parsers give None for 'auto', the default typed
            values[name] = value.value if isinstance(value, (DType, WeightFormat)) else value
    return DeploymentWords(**values)


__all__ = ["BlockSizeOpt", "DataParallelOpt", "MambaSsmDTypeOpt", "EnableDpAttentionOpt", "EnableExpertParallelOpt", "parallel_degrees", "DTypeAutoOpt", "KvCacheDTypeOpt", "KvDTypeOpt", "MaxModelLenOpt", "MemFractionStaticOpt",
           "PageSizeOpt", "QuantizationOpt", "weights", "TensorParallelOpt", "TensorParallelSizeOpt", "UtilizationOpt",
           "WeightDTypeOpt", "words_of"]
