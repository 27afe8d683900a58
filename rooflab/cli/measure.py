"""`rooflab calibrate`, `bench` and `validate`: measure a GPU and hold the model against the measurements."""


import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import RooflabError
from ..output import Format, check_writable
from ..vocab import KernelFamily
from . import params
from .error_path import friendly
from .options import FormatOpt



@friendly
def calibrate(
    gpu: Annotated[Optional[str], typer.Option("--gpu", "-g", help="Spec of this machine's GPU (default: detected from the device name).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="GPU YAML to write with the measured: section (default: ./<gpu>.yaml).")] = None,
    copy_gib: Annotated[float, typer.Option("--copy-gib", parser=params.number(0.01, 64), metavar="X",
                                            help="Size of the copy buffer, GiB.")] = 2.0,
    collectives: Annotated[bool, typer.Option("--collectives", help="Instead: time NCCL's collectives between this "
                                              "machine's GPUs (torchrun, one process a GPU) and write the fitted "
                                              "interconnect: section.")] = False,
    nproc: Annotated[int, typer.Option("--nproc", parser=params.count(2, 1024), metavar="N",
                                       help="--collectives: GPUs (processes) to time them over.")] = 2,
    from_files: Annotated[Optional[list[Path]], typer.Option("--from", metavar="FILE", help="--collectives: fit a "
                                                             "measurement file already made (repeat) instead of "
                                                             "measuring.")] = None,
    fp8: Annotated[bool, typer.Option("--fp8", help="Instead: the fp8 rates through PyTorch (torch._scaled_mm GEMM; "
                                      "fp8 attention where a back end takes e4m3), added to the spec's measured: "
                                      "section, every other ceiling kept.")] = False,
) -> None:
    """Measure this GPU's copy bandwidth, fp16/bf16 GEMM rates and exp throughput; write them as `measured:`.
    With --collectives: NCCL's collectives between this machine's GPUs, fitted into the `interconnect:` section."""
    from ..load import spec_path

    if fp8 and (collectives or from_files):
        raise typer.BadParameter("--fp8 and --collectives are separate runs; give one")
    if collectives or from_files:
        from ..measure.calibrate_comm import calibrate_collectives

        if from_files and not collectives:
            raise typer.BadParameter("--from goes with --collectives")
        inputs = [*(from_files or ())]
        if gpu is not None:
            inputs.append(spec_path("hardware", "GPU", gpu))   # a bad --gpu named before any work
        if output is not None:
            check_writable(output, inputs, option="--output")  # before the run: never over an input
        try:
            link, target = calibrate_collectives(gpu, output, nproc, tuple(from_files or ()),
                                                 " ".join(["rooflab", *sys.argv[1:]]))
        except RooflabError as exc:
            raise RooflabError(f"--collectives: {exc}") from None
        for c in link.collectives:
            err = "-" if c.median_error is None else f"{c.median_error:.1%} / {c.worst_error:.1%}"
            typer.echo(f"{c.collective.value:15s} {c.world_size} GPUs {c.timing:5s} {len(c.bands)} band(s), "
                       f"held-out error median / worst {err}")
        typer.echo(f"wrote {target}")
        return
    from ..measure.calibrate import calibrate as run_calibration
    from ..measure.calibrate import describe, write_spec
    from ..measure.device import check_spec_matches, default_spec, device_name
    from ..units import GiB

    if gpu is not None:                                   # the options first, then the device
        spec_path("hardware", "GPU", gpu)
    if output is not None:
        check_writable(output, option="--output")
    spec = gpu or default_spec()
    check_spec_matches(spec, device_name())
    source = spec_path("hardware", "GPU", spec)
    target = check_writable(output or Path.cwd() / source.name, [source], option="--output")
    if fp8:
        from ..measure.calibrate import calibrate_fp8, with_fp8
        from ..load import load_gpu

        measured = load_gpu(spec).measured
        if measured is None:
            raise RooflabError(f"--fp8: {source} has no measured: section; run `rooflab calibrate` without --fp8 first")
        rates = calibrate_fp8(" ".join(["rooflab", *sys.argv[1:]]), spec)
        write_spec(source, target, with_fp8(measured, rates))
        for name, value, note in (("GEMM fp8 (e4m3)", rates.gemm_flop_per_s, rates.gemm_note),
                                  ("attention fp8 (e4m3)", rates.attention_flop_per_s, rates.attention_note)):
            typer.echo(f"{name:32s} {f'{value / 1e12:.1f} TFLOP/s' if value else '-'}  {note}")
        typer.echo(f"wrote {target}")
        return
    typer.echo(f"calibrating {device_name()} against {spec}: copy, GEMM fp16, GEMM bf16, exp ...", err=True)
    cal = run_calibration(" ".join(["rooflab", *sys.argv[1:]]), spec, copy_bytes=int(copy_gib * GiB))
    write_spec(source, target, cal.measured())
    for name, value in describe(cal):
        typer.echo(f"{name:32s} {value}")
    typer.echo(f"wrote {target}")


@friendly
def validate(
    file: Annotated[Optional[Path], typer.Argument(help="Measurement CSV from `rooflab bench` (default: the bundled H200 dataset, the sweep and the new kernels' campaign).")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", "-g", help="GPU spec to predict with (default: the one the file names).")] = None,
    fmt: FormatOpt = Format.table,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Also write the result to this file.")] = None,
    fit_from: Annotated[Optional[list[Path]], typer.Option("--fit-from", metavar="FILE", help="Fit the time model on these campaigns (repeat) and hold out every row of FILE: the out-of-campaign error.")] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Table and markdown: every column (achieved rates, each fitted constant); CSV and JSON always have them.")] = False,
    published: Annotated[bool, typer.Option("--published", help="The published kernel measurements (measurements/published/kernels/) instead: floors beaten, each named, and the prediction error per source, GPU and implementation family (fitted on by nothing).")] = False,
) -> None:
    """Measured against predicted: fraction of the floor per kernel, and the time model's held-out error."""
    if published:
        from ..fit.published_check import published_text

        given = [name for name, value in (("FILE", file), ("--gpu", gpu), ("--fit-from", fit_from), ("--wide", wide))
                 if value]
        if given:
            raise typer.BadParameter(f"--published checks the bundled published rows; it takes no {', '.join(given)}")
        text = published_text(fmt)
        if output is not None:
            from ..output import write_atomic
            from ..published import published_files

            write_atomic(output, text, inputs=published_files())    # never over a bundled check file
        typer.echo(text, nl=False)
        return
    from ..fit.dist_validate import validate_any
    from ..fit.validate import bundled_dataset, validate as validate_dataset
    from ..output import write_atomic
    from ..render_validation import render_validation

    fit_from = tuple(fit_from or ())
    result = validate_dataset(None, gpu, fit_from=fit_from) if file is None else validate_any(file, gpu, fit_from)
    text = render_validation(result, fmt, wide)
    if output is not None:
        from ..fit.validate import spec_files

        read = [*(bundled_dataset() if file is None else (file,)), *fit_from]
        write_atomic(output, text, inputs=[*read, *spec_files(read, gpu)])     # the campaigns' GPU YAMLs too
    typer.echo(text, nl=False)


@friendly
def bench(
    gpu: Annotated[Optional[str], typer.Option("--gpu", "-g", help="Spec of this machine's GPU (default: detected); a calibrated YAML records its ceilings beside the data.")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Measurement CSV to write.")] = Path("rooflab-bench.csv"),
    kernels: Annotated[Optional[list[KernelFamily]], typer.Option("--kernel", "-k", help="Kernel families to run (repeat; default all). paged includes split-KV.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A small sweep (a few configurations per kernel).")] = False,
    second: Annotated[bool, typer.Option("--second-campaign", help="The out-of-campaign sweep: shapes the standard sweep does not have (head dims 64/128/256, other lengths, heads, groups, batches).")] = False,
    new_kernels: Annotated[bool, typer.Option("--new-kernels", help="The attention variants' kernels instead: windowed and chunked flash prefill (sinks too), windowed paged decode, multi-token decode and MLA decode (with --quick: two of each).")] = False,
    gap: Annotated[bool, typer.Option("--gap-campaign", help="The regimes the fits missed: batches of 1-32 short prefills (T 256-4k, d 64/128, GQA 4/8, causal and not), paged decode at batch 1-64 over 1k-128k, split-KV from 2 to the recommended splits.")] = False,
    mla_sweep: Annotated[bool, typer.Option("--mla-sweep", help="MLA decode across 16-128 heads, q_len 1-4, bf16 and fp8 latents.")] = False,
    torch: Annotated[bool, typer.Option("--torch/--no-torch", help="Also time PyTorch's backends on the same shapes, where PyTorch is installed.")] = True,
    repeats: Annotated[int, typer.Option("--repeats", parser=params.count(3, 10_000), metavar="N",
                                         help="Timed repeats per configuration (the median is kept).")] = 20,
    distributed: Annotated[bool, typer.Option("--distributed", help="The multi-GPU bench instead (launches torchrun, "
                                              "NCCL): collectives, DCP decode, a TP attention layer, ring prefill, the "
                                              "GEMM family and a decode step; -o names the files' prefix.")] = False,
    nproc: Annotated[int, typer.Option("--nproc", parser=params.count(2, 1024), metavar="N",
                                       help="--distributed: processes, one a GPU.")] = 2,
    cpu: Annotated[bool, typer.Option("--cpu", help="--distributed on CPU processes (gloo, tiny shapes): tests the "
                                      "code paths; the times mean nothing.")] = False,
    section: Annotated[Optional[list[str]], typer.Option("--section", metavar="NAME", help="--distributed: only these "
                                                         "sections (repeat): check, collectives, dcp, gemm, step, tp, "
                                                         "ring.")] = None,
) -> None:
    """Check every bundled kernel against the fp64 oracle, then time it over a sweep; write a CSV with metadata.
    --distributed: the multi-GPU bench over --nproc GPUs (rooflab.measure.distributed)."""
    if distributed or cpu:
        from ..measure.distributed.launch import launch_cli

        result = launch_cli(nproc, output, cpu, tuple(section or ()), gpu, " ".join(["rooflab", *sys.argv[1:]]))
        for name, path in result.files.items():
            typer.echo(f"wrote {path}")
        for n in result.notes:
            if n["note"] in ("failed", "section_failed", "skipped"):
                typer.echo(f"rank {n['rank']} {n['note']}: {n['value']}", err=True)
        if result.returncode:
            typer.echo(f"torchrun exited with {result.returncode} (see the ranks' logs beside the files)", err=True)
        return
    if section:                                           # would be ignored: the single-GPU bench has no sections
        raise RooflabError(f"--section {section[0]}: applies with --distributed (or --cpu) only")
    from ..measure.cases import gap_campaign_cases, mla_sweep_cases, new_kernel_cases, second_campaign_cases, sweep
    from ..measure.device import check_spec_matches, default_spec, device_name
    from ..measure.run import run_to_file
    from ..load import spec_path

    if gpu is not None:                                   # the options first, then the device
        spec_path("hardware", "GPU", gpu)
    check_writable(output, option="--output")
    spec = gpu or default_spec()
    check_spec_matches(spec, device_name())
    families = tuple(kernels) if kernels else tuple(KernelFamily)
    cases = sweep(families, quick)
    if second:
        cases = [c for c in second_campaign_cases() if c.kernel.family in families]
    if new_kernels:
        cases = [c for c in new_kernel_cases(quick) if c.kernel.family in families]
    if gap:
        cases = [c for c in gap_campaign_cases() if c.kernel.family in families]
    if mla_sweep:
        cases = [c for c in mla_sweep_cases() if c.kernel.family in families]
    typer.echo(f"{len(cases)} configurations on {device_name()}; progress on stderr", err=True)
    result = run_to_file(cases, spec, output, " ".join(["rooflab", *sys.argv[1:]]), torch, repeats)
    typer.echo(f"wrote {len(result.rows)} measurements to {output}")
    for failure in result.failures:
        typer.echo(f"not timed: {failure}", err=True)
