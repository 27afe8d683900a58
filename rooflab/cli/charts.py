"""`rooflab plot ...`: the charts, written as .png, .svg or .pdf, and with --data their numbers as .csv or .json."""


import atexit
import gc
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..units import DType
from ..errors import RooflabError
from ..limits import MAX_BATCH, MAX_TOKENS
from . import deployment_options as dopt
from . import params
from .error_path import friendly
from .lengths import parse_lengths
from .options import ModelOpt

GpusOpt = Annotated[Optional[list[str]], typer.Option(
    "--gpu", "-g", metavar="GPU", help="Bundled GPU name, an alias (h200, 'NVIDIA H100 80GB HBM3') or a path to a GPU "
                                       "YAML; repeat (or give a comma list) to compare several (default h100-sxm).")]


LengthsOpt = Annotated[Optional[list[str]], typer.Option(
    "--lengths", metavar="N[,N...]", help="The lengths to compute, instead of the default grid: a comma list "
                                                "or repeated (1k,4k,32k; 32k = 32,000, 32K = 32,768).")]


def _image_path(text: str) -> Path:
    """-o as a Path; an empty value is refused here, before Path('') would read it as the current folder."""
    if isinstance(text, Path):
        return text
    if not str(text).strip():
        raise typer.BadParameter("is empty; give an image file name ending .png, .svg or .pdf")
    return Path(text)


def _data_path(text: str) -> Path:
    """--data as a Path; an empty value is refused here, as for -o."""
    if isinstance(text, Path):
        return text
    if not str(text).strip():
        raise typer.BadParameter("is empty; give a file name ending .csv or .json")
    if Path(text).suffix.lower() not in (".csv", ".json"):
        raise typer.BadParameter(f"{text}: give a file name ending .csv or .json (the extension picks the format)")
    return Path(text)


DataOpt = Annotated[Optional[Path], typer.Option(
    "--data", parser=_data_path, metavar="FILE",
    help="Also write the numbers the chart draws: .csv or .json (strict JSON), one row a point, the sweep's "
         "to_frame() columns; floors and predictions apart (the 'estimate' column).")]


def _output_opt(default: str):
    return Annotated[Optional[Path], typer.Option("--output", "-o", parser=_image_path, metavar="FILE",
                                                  help=f"Image to write: .png, .svg or .pdf (default {default}).")]


#: GPUs one chart draws: each is a set of lines in its own colour, and each costs a sweep.
MAX_CHART_GPUS = 32


def _dtype(dtype, model, gpus):
    """--dtype, or for auto the checkpoint's dtype as vLLM loads it on the first GPU (ModelSpec.loaded_dtype)."""
    return dtype or model.loaded_dtype(gpus[0].compute_capability_version)


def _names(values: list[str] | None, default: str) -> list[str]:
    """GPU names from repeated options and comma lists; an empty entry is an error, no option the default."""
    if not values:
        return [default]
    names = [part.strip() for value in values for part in value.split(",")]
    if not all(names):
        raise RooflabError(f"--gpu: {','.join(values)!r} has an empty name")
    if len(names) > MAX_CHART_GPUS:
        raise RooflabError(f"--gpu: {len(names):,} GPUs; a chart draws at most {MAX_CHART_GPUS} (more lines cannot "
                           "be told apart)")
    return names


def _lengths(values: list[str] | None, right_end: int | None, right_flag: str) -> list[int] | None:
    """--lengths as whole token counts (None: the default grid); with the default grid's right end, an error."""
    if values and right_end is not None:
        raise RooflabError(f"give --lengths or {right_flag}, not both ({right_flag} is the right end of the "
                           "default grid)")
    return parse_lengths(values, "--lengths") or None


def _save(fig, output: Path | None, default: str, frame=None, data: Path | None = None, inputs=()) -> None:
    """The image, and with --data the chart's numbers beside it (`frame`: a callable giving the DataFrame). --data's
    path is checked before the image is written, so a refused --data leaves no image behind and is named as
    --data (write_atomic's own check names -o); neither is written over one of `inputs` (_inputs: the files the
    command read), under any spelling or through a link."""
    from ..output import check_writable
    from ..plot import save_data, save_figure

    if data is not None:
        check_writable(data, inputs, option="--data")
    typer.echo(f"wrote {save_figure(fig, output or Path(default), inputs)}")
    if data is not None:
        typer.echo(f"wrote {save_data(frame(), data, inputs)}")
    _no_collection_at_exit()


def _inputs(model=None, gpus=(), files=()) -> list[Path]:
    """The files a chart command read: the model's (load_model's config.json or YAML), each GPU's YAML, and
    `files` (measurement CSVs, their GPU YAMLs), for _save to keep the image and --data off them."""
    from ..load import gpu_file, model_file

    return [*([model_file(model)] if model is not None else []), *(gpu_file(g) for g in gpus),
            *(Path(f) for f in files if f is not None)]


def _no_collection_at_exit() -> None:
    """Freeze the garbage collector's objects when the process exits (gc.freeze, from an atexit handler), so that
    Python's last collection does not walk the tens of thousands of objects matplotlib made: a fifth of a second of
    a `rooflab plot` run on a 2-core machine. Nothing needs that collection: every file is closed as it is written,
    and the standard streams are flushed at exit all the same. Registered once however many charts are drawn."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


def _frames(sweeps) -> "object":
    """One sweep's to_frame(), or several GPUs' concatenated (each row names its GPU)."""
    import pandas as pd

    return pd.concat([s.to_frame() for s in sweeps], ignore_index=True)


@friendly
def plot_roofline(
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", parser=params.count(1, MAX_TOKENS), metavar="N",
                                         help="Prefill tokens; also the decode context of the paged point.")] = 8192,
    batch: Annotated[int, typer.Option("--batch", "-b", parser=params.count(1, MAX_BATCH), metavar="N",
                                       help="Prefill sequences in the batch.")] = 1,
    dtype: dopt.DTypeAutoOpt = DType.fp16,
    causal: Annotated[bool, typer.Option("--causal/--no-causal", help="Causal mask for the prefill points (decoders prefill causally; --no-causal for the chapter's figures).")] = True,
    decode_batch: Annotated[int, typer.Option("--decode-batch", parser=params.count(1, MAX_BATCH), metavar="N",
                                              help="Sequences of the paged-decode point.")] = 1,
    flash_tiled: Annotated[bool, typer.Option("--flash-tiled/--no-flash-tiled", help="Also draw flash's tiled upper bound on bytes (hollow marker).")] = False,
    exp_roof: Annotated[bool, typer.Option("--exp-roof/--no-exp-roof", help="Also draw the exp roof of this attention on the first GPU (its exp rate x the FLOPs an exp at the model's head dim).")] = False,
    measurements: Annotated[Optional[Path], typer.Option("--measurements", metavar="FILE", help="Measurement CSV from `rooflab bench`: its kernels as points; taken on the first --gpu (default: the file's).")] = None,
    output: _output_opt("roofline.png") = None,
    data_file: DataOpt = None,
) -> None:
    """Roofline chart: memory and compute roofs, the ridge, naive (and its kernels), flash, paged decode, merge."""
    from ..fit.validate import measured_points, validate
    from ..load import load_gpu, load_model
    from ..plot import roofline_chart, roofline_data

    names = _names(gpu, "h100-sxm")
    measured = []
    if measurements is not None:
        validation = validate(measurements, names[0] if gpu else None, fit=False)  # refuses another GPU's file
        measured = measured_points(validation)
        names = names if gpu else [validation.gpu]
        from ..plot.points import beaten_text, floor_beaters

        for m in floor_beaters(measured):      # named on the chart too; a defect to explain, never a point among others
            typer.echo(f"warning: beats its floor: {beaten_text(m)}", err=True)
    gpus = [load_gpu(name) for name in names]
    m = load_model(model)
    data = roofline_data(m, gpus, seq_len, _dtype(dtype, m, gpus), batch, causal, decode_batch, flash_tiled=flash_tiled)
    _save(roofline_chart(data, measured, exp_roof), output, "roofline.png",
          lambda: data.chart_frame(measured, exp_roof), data_file, _inputs(model, names, [measurements]))


def _prefill_inputs(model, gpu, dtype, lengths, max_seq_len):
    """The prefill charts' (memory, time) model, GPUs (default the H100), dtype as loaded and length axis."""
    from ..load import load_gpu, load_model

    seq_lens = _lengths(lengths, max_seq_len, "--max-seq-len")
    gpus = [load_gpu(name) for name in _names(gpu, "h100-sxm")]
    m = load_model(model)
    return m, gpus, _dtype(dtype, m, gpus), seq_lens, _inputs(model, _names(gpu, "h100-sxm"))


#: --batch of the prefill charts (memory, time).
PrefillBatchOpt = Annotated[int, typer.Option("--batch", "-b", parser=params.count(1, MAX_BATCH), metavar="N",
                                              help="Sequences prefilled together.")]


@friendly
def plot_memory(
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    batch: PrefillBatchOpt = 1,
    dtype: dopt.DTypeAutoOpt = DType.fp16,
    max_seq_len: Annotated[Optional[int], typer.Option("--max-seq-len", parser=params.count(512, MAX_TOKENS), metavar="N",
                                                       help="Right end of the length axis (default: past where naive stops fitting).")] = None,
    lengths: LengthsOpt = None,
    output: _output_opt("memory.png") = None,
    data_file: DataOpt = None,
) -> None:
    """Bytes of S and P against sequence length, with each GPU's capacity minus weights: where naive prefill stops fitting."""
    from ..plot import memory_chart, memory_sweep

    m, gpus, dtype, seq_lens, inputs = _prefill_inputs(model, gpu, dtype, lengths, max_seq_len)
    sweep = memory_sweep(m, gpus, batch, dtype, max_seq_len, seq_lens)
    _save(memory_chart(sweep), output, "memory.png", sweep.to_frame, data_file, inputs)


@friendly
def plot_time(
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    batch: PrefillBatchOpt = 1,
    dtype: dopt.DTypeAutoOpt = DType.fp16,
    causal: Annotated[bool, typer.Option("--causal/--no-causal", help="Causal mask (decoders prefill causally; --no-causal for the chapter's figures).")] = True,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", parser=params.count(1, MAX_TOKENS), metavar="N",
                                         help="Length marked with both times and their ratio (with --lengths: marked when it is one of them).")] = 8192,
    max_seq_len: Annotated[Optional[int], typer.Option("--max-seq-len", parser=params.count(512, MAX_TOKENS), metavar="N",
                                                       help="Right end of the length axis.")] = None,
    lengths: LengthsOpt = None,
    output: _output_opt("time.png") = None,
    data_file: DataOpt = None,
) -> None:
    """Naive and flash prefill time floors (all layers) against sequence length; several GPUs side by side."""
    from ..plot import time_chart, time_sweeps

    m, gpus, dtype, seq_lens, inputs = _prefill_inputs(model, gpu, dtype, lengths, max_seq_len)
    sweeps = time_sweeps(m, gpus, batch, dtype, causal, max_seq_len, seq_len, seq_lens)
    _save(time_chart(sweeps), output, "time.png", lambda: _frames(sweeps), data_file, inputs)


@friendly
def plot_decode(
    ctx: typer.Context,
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    batch: Annotated[Optional[list[str]], typer.Option("--batch", "-b", metavar="N[,N...]", help="Batch sizes, one line each; repeat or give a comma list (default 1,8,32,128).")] = None,
    page_size: dopt.PageSizeOpt = None,
    block_size: dopt.BlockSizeOpt = None,
    dtype: dopt.DTypeAutoOpt = DType.fp16,
    kv_dtype: dopt.KvDTypeOpt = None,
    kv_cache_dtype: dopt.KvCacheDTypeOpt = None,
    max_context_len: Annotated[Optional[int], typer.Option("--max-context-len", parser=params.count(512, MAX_TOKENS),
                                                           metavar="N", help="Right end of the context axis.")] = None,
    lengths: LengthsOpt = None,
    output: _output_opt("decode.png") = None,
    data_file: DataOpt = None,
) -> None:
    """Attention time of one decode step (all layers) against context length, one line per batch size; several
    GPUs side by side."""
    from ..load import load_gpu, load_model
    from ..plot import DECODE_BATCHES, decode_chart, decode_sweeps

    context_lens = _lengths(lengths, max_context_len, "--max-context-len")
    batches = parse_lengths(batch, "--batch", MAX_BATCH) or list(DECODE_BATCHES)
    gpus = [load_gpu(name) for name in _names(gpu, "h100-sxm")]
    d, _, _ = dopt.words_of(ctx).resolve()
    m = load_model(model)
    sweeps = decode_sweeps(m, gpus, batches, d.page_size, _dtype(dtype, m, gpus), d.kv_cache_dtype, max_context_len,
                           context_lens)
    _save(decode_chart(sweeps), output, "decode.png", lambda: _frames(sweeps), data_file,
          _inputs(model, _names(gpu, "h100-sxm")))


@friendly
def plot_capacity(
    ctx: typer.Context,
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    page_size: dopt.PageSizeOpt = None,
    block_size: dopt.BlockSizeOpt = None,
    weight_dtype: dopt.WeightDTypeOpt = None,
    quantization: dopt.QuantizationOpt = None,
    kv_dtype: dopt.KvDTypeOpt = None,
    kv_cache_dtype: dopt.KvCacheDTypeOpt = None,
    utilization: dopt.UtilizationOpt = None,
    mem_fraction_static: dopt.MemFractionStaticOpt = None,
    max_model_len: dopt.MaxModelLenOpt = None,
    tensor_parallel: dopt.TensorParallelOpt = None,
    tensor_parallel_size: dopt.TensorParallelSizeOpt = None,
    lengths: LengthsOpt = None,
    output: _output_opt("capacity.png") = None,
    data_file: DataOpt = None,
) -> None:
    """Concurrent sequences against context length: paged KV cache against contiguous max-length reservation;
    several GPUs side by side."""
    from ..load import load_gpu, load_model
    from ..plot import capacity_chart, capacity_sweeps

    context_lens = _lengths(lengths, None, "")
    gpus = [load_gpu(name) for name in _names(gpu, "h100-sxm")]
    m = load_model(model)
    d, _, _ = dopt.words_of(ctx).resolve(checkpoint=m)
    sweeps = capacity_sweeps(m, gpus, d.page_size, d.weight_format, d.kv_cache_dtype, d.gpu_memory_utilization,
                             max_model_len, d.tensor_parallel, context_lens)
    _save(capacity_chart(sweeps), output, "capacity.png", lambda: _frames(sweeps), data_file,
          _inputs(model, _names(gpu, "h100-sxm")))


@friendly
def plot_validation(
    file: Annotated[Optional[Path], typer.Argument(help="Measurement CSV from `rooflab bench` (default: the bundled H200 dataset).")] = None,
    peers: Annotated[bool, typer.Option("--peers/--no-peers", help="Also draw PyTorch's backends.")] = False,
    output: _output_opt("validation.png") = None,
    data_file: DataOpt = None,
) -> None:
    """Measured time against the calibrated model's prediction, held-out rows filled."""
    from ..fit.validate import bundled_dataset, spec_files, validate
    from ..plot import validation_chart

    v = validate(file)
    read = bundled_dataset() if file is None else (file,)
    impls = tuple(sorted({g.impl for g in v.groups})) if peers else None
    _save(validation_chart(v, impls), output, "validation.png", lambda: _validation_frame(v, impls), data_file,
          _inputs(files=[*read, *spec_files(read)]))


def _validation_frame(v, impls: tuple[str, ...] | None):
    """The rows validation_chart draws (rooflab's own implementations, or `impls`; those with a prediction):
    rows_frame()'s columns; estimate 'prediction' for predicted_s beside the measured time."""
    frame = v.rows_frame()
    drawn = impls if impls is not None else tuple(sorted({r.impl for r in v.rows if r.impl.startswith("rooflab")}))
    frame = frame[frame["impl"].isin(drawn) & frame["predicted_s"].notna()].reset_index(drop=True)
    frame.insert(0, "estimate", "prediction")
    return frame
