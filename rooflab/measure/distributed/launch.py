"""`rooflab bench --distributed --nproc N`: launch the distributed bench with torchrun, then bundle what the ranks wrote.

    launch(nproc, out)   checks there are N GPUs (an error, not a hang, where there are fewer), starts
                         `torchrun --standalone --nproc-per-node N -m rooflab.measure.distributed.worker` with NVLink
                         multicast off (NCCL_NVLS_ENABLE=0 and its PyTorch / NVSHMEM switches) and a wall-clock
                         limit, and assembles the ranks' rows into measurement files:

    <prefix>-collectives.csv   all_reduce, all_gather, reduce_scatter, all_to_all, send_recv (impl nccl)
    <prefix>-distributed.csv   dcp_decode, tp_attention, ring_prefill (world_size 1 rows: the one-GPU baseline)
    <prefix>-gemm.csv          the GEMM family on one GPU (torch_cublas), small-op timings in the metadata
    <prefix>-step.csv          Llama-3-8B decode steps on one GPU (torch_graph)

Each file carries the run's metadata, `# world_size: N`, and the notes the ranks left (the NCCL check,
skipped cases, failed sections). `cpu=True` runs the same code on CPU processes with gloo and tiny
shapes: it tests the code paths (the CPU tests use it); its timings mean nothing.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from ...errors import InputError
from ...fit.records import FIELDS, Measurement, write_measurements
from ...vocab import Kernel, KernelFamily
from .step import LLAMA_3_8B
from .worker import SECTIONS

ROOT = Path(__file__).resolve().parents[2]
#: Environment every rank gets: NVLink multicast off (it can take a shared host's GPUs out of service), CuPy
#: views of torch tensors without a stream sync (views are made before any capture anyway).
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
            "CUPY_CUDA_ARRAY_INTERFACE_SYNC": "0", "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
FILES = {"collectives": (KernelFamily.collective,), "distributed": (KernelFamily.distributed,),
         "gemm": (KernelFamily.gemm,)}


@dataclass
class RunResult:
    """What a distributed run left: the files written, the rows, the notes and the torchrun exit status."""

    files: dict[str, Path] = field(default_factory=dict)
    rows: list[Measurement] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    returncode: int = 0
    seconds: float = 0.0


def gpu_count() -> int:
    """CUDA devices torch sees here (0 without torch or CUDA)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_launch(nproc: int, cpu: bool) -> None:
    """Refuse a run that cannot work, before starting any process: too few GPUs, no torch, one process."""
    if nproc < 2:
        raise InputError(f"--nproc {nproc}: a distributed run needs at least 2 processes")
    try:
        import torch.distributed as dist  # noqa: F401
    except ImportError:
        raise InputError("rooflab bench --distributed needs PyTorch with torch.distributed (pip install torch)") \
            from None
    if cpu:
        if not dist.is_gloo_available():
            raise InputError("--cpu runs on the gloo backend, which this PyTorch lacks")
        return
    have = gpu_count()
    if have < nproc:
        raise InputError(f"--nproc {nproc} needs {nproc} GPUs (one process per GPU); this machine has {have}"
                         + ("" if have else " (no CUDA device torch can use)")
                         + "; run with fewer, or --cpu to test the code paths on CPU")
    if not dist.is_nccl_available():
        raise InputError("this PyTorch has no NCCL backend; the distributed bench times NCCL collectives")


def launch(nproc: int, out: Path, sections: Sequence[str] = (), cpu: bool = False, deadline_s: float = 300.0,
           timeout_s: float = 600.0, prefix: str = "h200x2", command: str = "",
           gpu_spec: Optional[str] = None) -> RunResult:
    """Start the ranks, wait (at most `timeout_s`, then stop them), and write the measurement files under `out`."""
    import time

    check_launch(nproc, cpu)
    out = Path(out)
    work = out / f"{prefix}-ranks"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "-m", "rooflab.measure.distributed.worker", "--out", str(work), "--deadline-s", str(deadline_s),
           "--scale", "tiny" if cpu else "full"]
    for s in sections:
        cmd += ["--section", s]
    if gpu_spec:
        cmd += ["--gpu", str(gpu_spec)]
    env = {**os.environ, **SAFE_ENV, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                                 os.environ.get("PYTHONPATH")]))}
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    t0 = time.time()
    with open(work / "torchrun.log", "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
            log.write(f"\n[stopped after {timeout_s:.0f} s]\n")
    result = assemble(work, out, prefix, nproc, command or " ".join(cmd), gpu_spec, cpu)
    result.returncode, result.seconds = rc, time.time() - t0
    return result


def read_ranks(work: Path) -> tuple[list[Measurement], list[dict]]:
    """Every rank's measurements and notes, in the order they were written."""
    rows, notes = [], []
    for path in sorted(work.glob("rank*.jsonl")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            obj = json.loads(line)
            if "measurement" in obj:
                rows.append(_measurement(obj["measurement"]))
            else:
                notes.append({"rank": int(path.stem[4:]), "note": obj.get("note"), "value": obj.get("value")})
    return rows, notes


def _measurement(record: dict) -> Measurement:
    values = {k: (math.nan if v is None else v) for k, v in record.items() if k in FIELDS}
    values["kernel"] = Kernel(values["kernel"])
    return Measurement(**values)


def assemble(work: Path, out: Path, prefix: str, nproc: int, command: str, gpu_spec: Optional[str],
             cpu: bool) -> RunResult:
    """Write the measurement files from what the ranks left in `work` (see the module docstring)."""
    rows, notes = read_ranks(work)
    meta = run_metadata(command, gpu_spec, nproc, cpu)
    result = RunResult(rows=rows, notes=notes)
    groups = {name: [m for m in rows if m.kernel.family in families] for name, families in FILES.items()}
    groups["step"] = [m for m in rows if m.kernel is Kernel.decode_step]
    groups["distributed"] = [m for m in groups["distributed"] if m.kernel is not Kernel.decode_step]
    for name, members in groups.items():
        if not members:
            continue
        file_meta = dict(meta)
        if name in ("gemm", "step"):
            file_meta["world_size"] = "1"
            if name == "step":
                file_meta["model"] = LLAMA_3_8B.name          # the layer stack step.py times
            file_meta["ran_on"] = f"one GPU of the {nproc}-GPU run (the others were busy with the other section)"
        for key, text in _notes_for(name, notes).items():
            file_meta[key] = text
        path = out / f"{prefix}-{name}.csv"
        write_measurements(path, members, file_meta)
        result.files[name] = path
    return result


def _notes_for(name: str, notes: list[dict]) -> dict[str, str]:
    """The notes a file's metadata carries: the check and failures everywhere, small-op timings with the GEMMs."""
    out: dict[str, str] = {}
    for n in notes:
        key, value = n["note"], n["value"]
        if key == "check" and n["rank"] == 0:
            out["nccl_check"] = json.dumps(value, sort_keys=True)
        elif key in ("failed", "section_failed", "skipped"):
            out.setdefault(key, "")
            out[key] = (out[key] + "; " if out[key] else "") + f"rank {n['rank']}: {value}"
        elif key == "small_op" and name == "gemm":
            out[f"small_op_{value['op']}_b{value['batch']}_s"] = f"{value['seconds']:.4e}"
        elif key == "step_case" and name == "step" and value.get("kv_shared_across_layers"):
            out.setdefault("kv_shared_across_layers", "")
            out["kv_shared_across_layers"] += f"{value['context']}x{value['batch']} "
        elif key == "dcp_local" and name == "distributed":
            k = f"dcp_local_s_{value['context']}x{value['batch']}_rank{value['rank']}"
            out[k] = f"{value['local_s']:.4e}"
        elif key == "ring_compute_only" and name == "distributed":
            out[f"ring_compute_only_s_{value['tokens']}_rank{value['rank']}"] = f"{value['seconds']:.4e}"
    return out


def run_metadata(command: str, gpu_spec: Optional[str], nproc: int, cpu: bool) -> dict[str, str]:
    """Where and how the run was measured (no CUDA context is created here)."""
    from ... import __version__
    from ..device import _git_commit, _nvidia_smi, spec_for_device

    meta = {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "gpu_spec": gpu_spec or ("none (CPU)" if cpu else "unknown"), "world_size": str(nproc)}
    if not cpu:
        meta["device_name"] = _nvidia_smi("name")
        if not gpu_spec:    # the spec nvidia-smi's name resolves to (a GPU rooflab does not bundle stays unknown)
            meta["gpu_spec"] = spec_for_device(meta["device_name"]) or "unknown"
        meta["driver"] = _nvidia_smi("driver_version")
        meta["clocks_sm_mem_mhz"] = _nvidia_smi("clocks.sm,clocks.mem")
    try:
        import torch

        meta["torch"] = torch.__version__
        if not cpu and torch.cuda.is_available():
            meta["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
            meta["cuda_runtime"] = str(torch.version.cuda)
    except Exception:
        meta["torch"] = "not installed"
    meta.update({"backend": "gloo" if cpu else "nccl", "nvls": os.environ.get("NCCL_NVLS_ENABLE", "0 (set by rooflab)"),
                 # the console script sets 1 where the user did not (rooflab._entry); the ranks inherit it
                 "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
                 "rooflab": __version__, "git_commit": _git_commit(), "host": platform.node(), "command": command})
    return meta


def topology() -> str:
    """`nvidia-smi topo -m` (how the GPUs are linked), or why it is not there."""
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi not found"
    done = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20)
    return done.stdout if done.returncode == 0 else done.stderr




def summary(rows: Sequence[Measurement]) -> str:
    """A short text table of a run: bus bandwidth of the collectives, DCP and TP against one GPU, ring prefill,
    decode steps and a few GEMMs (what the device run prints last)."""
    from ...comm import bus_bytes

    lines = []
    coll = [m for m in rows if m.kernel.is_collective]
    for m in sorted(coll, key=lambda m: (m.kernel.value, m.timing, m.bytes_per_rank)):
        if m.bytes_per_rank in (1 << 16, 1 << 20, 1 << 24, 1 << 28, 1 << 30):
            bw = bus_bytes(m.kernel, m.bytes_per_rank, m.world_size) / m.time_s
            lines.append(f"{m.kernel.value:14s} {m.timing:5s} {m.bytes_per_rank / 2**20:9.3f} MiB/rank "
                         f"{m.time_s * 1e6:10.1f} us  bus {bw / 1e9:7.1f} GB/s")
    for kernel in (Kernel.dcp_decode, Kernel.tp_attention, Kernel.ring_prefill):
        base = {(m.context_lens, m.seq_len): m for m in rows if m.kernel is kernel and m.world_size == 1}
        for m in rows:
            one = base.get((m.context_lens, m.seq_len))
            if m.kernel is kernel and m.world_size > 1 and one is not None:
                what = m.context_lens or f"T={m.seq_len}"
                lines.append(f"{kernel.value:14s} {what:>14s}  1 GPU {one.time_s * 1e6:10.1f} us  {m.world_size} GPUs "
                             f"{m.time_s * 1e6:10.1f} us  speedup {one.time_s / m.time_s:5.3f}x  err {m.max_rel_err:.1e}")
    for m in rows:
        if m.kernel is Kernel.decode_step:
            lines.append(f"decode_step    {m.context_lens:>14s}  {m.time_s * 1e3:8.3f} ms  splits {m.splits}")
    for m in rows:
        if m.kernel is Kernel.gemm and m.m in (1, 64, 4096) and m.dtype == "bf16":
            lines.append(f"gemm {m.dtype} {m.m:5d} x {m.n:6d} x {m.k:5d}  {m.time_s * 1e6:9.1f} us  "
                         f"{2 * m.m * m.n * m.k / m.time_s / 1e12:6.1f} TFLOP/s  {m.n * m.k * 2 / m.time_s / 1e12:5.2f} TB/s")
    return "\n".join(lines)


def launch_cli(nproc: int, output: Path, cpu: bool, sections: Sequence[str], gpu: Optional[str],
               command: str) -> RunResult:
    """`rooflab bench --distributed`: `output` names the files' prefix (rooflab-bench.csv -> rooflab-bench-*.csv),
    unknown sections are refused, the GPU spec is --gpu or (run_metadata) the one nvidia-smi's name resolves to."""
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise InputError(f"--section {unknown[0]}: unknown; sections are {', '.join(SECTIONS)}")
    output = Path(output)
    prefix = output.name[:-4] if output.suffix == ".csv" else output.name
    return launch(nproc, output.parent if str(output.parent) else Path("."), sections, cpu=cpu, prefix=prefix,
                  command=command, gpu_spec=gpu)


__all__ = ["RunResult", "assemble", "check_launch", "gpu_count", "launch", "launch_cli", "read_ranks", "run_metadata",
           "summary", "topology"]
