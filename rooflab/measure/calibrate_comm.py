"""`rooflab calibrate --collectives`: run the distributed bench's check and collectives sections over N GPUs (or
read measurement files), fit each collective's bands (rooflab.fit.comm_fit) and write the GPU YAML's
`interconnect:` section."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional, Sequence

from ..errors import InputError
from ..fit.comm_fit import calibrated_interconnect, with_interconnect
from ..fit.records import read_measurements, spec_for_device
from ..load import clear_cache, load_gpu, parse_yaml, spec_from_mapping, spec_path
from ..output import check_writable, write_atomic
from ..specs import GpuSpec
from .device import _nvidia_smi
from .distributed.launch import launch


def calibrate_collectives(gpu_ref: Optional[str], output, nproc: int, from_files: Sequence, command: str):
    """`rooflab calibrate --collectives`: measure (the distributed bench's check and collectives sections over
    `nproc` GPUs) or read `from_files`, fit, and write the GPU YAML with its `interconnect:` section (an OutputError
    naming --output where the target is the GPU YAML read or one of `from_files`, under any spelling or link).
    Returns the interconnect written and the target path."""
    rows, campaigns, meta = [], [], {}
    if from_files:
        for path in from_files:
            meta, found = read_measurements(Path(path))
            mine = [m for m in found if m.kernel.is_collective]
            rows += mine
            campaigns.append((Path(path).name, mine))
        gpu_ref = gpu_ref or meta.get("gpu_spec")
    else:
        gpu_ref = gpu_ref or spec_for_device(_nvidia_smi("name"))
        out = Path(output).parent if output else Path.cwd()
        result = launch(nproc, out, ("check", "collectives"), prefix=f"collectives-x{nproc}", command=command,
                        gpu_spec=gpu_ref)
        rows = [m for m in result.rows if m.kernel.is_collective]
        campaigns.append((result.files["collectives"].name if "collectives" in result.files else "collectives", rows))
        meta = {"date": "", "device_name": ""}
    if not gpu_ref:
        raise InputError("name the GPU's spec with --gpu (the measurements name none)")
    if not rows:
        raise InputError("no collective measurements to fit" + (f" in {', '.join(map(str, from_files))}"
                                                                 if from_files else ""))
    source = spec_path("hardware", "GPU", gpu_ref)
    gpu = load_gpu(source)
    measured = f"{meta.get('date', '')} on {meta.get('device_name', '?')}, NCCL {meta.get('nccl', '?')}: {command}"
    for name, found in campaigns:           # each fit names the file its rows came from (a later file wins a key)
        if found:
            link = calibrated_interconnect(gpu, found, name, measured.strip())
            gpu = dataclasses.replace(gpu, interconnect=link)
    target = Path(output) if output else Path.cwd() / source.name
    inputs = [source, *map(Path, from_files)]           # never written over: the GPU YAML read, the measurements
    check_writable(target, inputs, option="--output")
    text = with_interconnect(source.read_text(), link)
    spec_from_mapping(GpuSpec, parse_yaml(text, str(target)), str(target))
    write_atomic(target, text, inputs)
    clear_cache()
    return link, target


__all__ = ["calibrate_collectives"]
