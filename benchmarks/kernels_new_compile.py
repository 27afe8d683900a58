"""Compile kernel instantiations through NVRTC (the path CuPy takes) without a GPU; report registers and spills.

Run from the repository root on any machine with NVRTC 13 (pip: nvidia-cuda-nvrtc; its lib folder on LD_LIBRARY_PATH)
and the CUDA headers (CUDA_PATH, default /usr/local/cuda*), and, for the
resource report and SASS, cuobjdump and nvdisasm (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm):

    python3 benchmarks/kernels_new_compile.py [--sass DIR] [--only SUBSTRING] [--jobs N]

Each (file, name expression) pair of rooflab.kernels.precompile.instantiations (every default,
variant and new-kernel instantiation the launchers and tests use) is compiled with CuPy's option
order (the file's FILE_OPTIONS, then -arch=sm_90 -ftz=true), the cubin's resource usage read with
`cuobjdump -res-usage`, and, with --sass, the SASS written per instantiation so two trees can be
diffed. Nothing here needs CuPy or a device.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.kernels._runtime import FILE_OPTIONS, kernel_source  # noqa: E402
from rooflab.kernels.precompile import all_instantiations  # noqa: E402


def _find(pattern: str) -> str:
    hits = sorted(glob.glob(pattern, recursive=True))
    if not hits:
        raise SystemExit(f"not found: {pattern}")
    return hits[-1]


def _site() -> str:
    import nvidia  # the pip wheels' namespace package

    return list(nvidia.__path__)[0]


NVRTC = ctypes.CDLL(_find(os.path.join(_site(), "**", "libnvrtc.so*")))
CUOBJDUMP = _find(os.path.join(_site(), "**", "bin", "cuobjdump"))
#: cuda_fp16.h and friends (CuPy passes its CUDA include folder the same way).
CUDA_INCLUDE = os.path.dirname(_find(os.path.join(os.environ.get("CUDA_PATH", "/usr/local/cuda*"), "include",
                                                  "cuda_fp16.h")))


def _check(status: int, what: str, prog: ctypes.c_void_p | None = None) -> None:
    if status == 0:
        return
    log = ""
    if prog is not None:
        size = ctypes.c_size_t()
        NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        NVRTC.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
    raise RuntimeError(f"{what} failed ({status}):\n{log}")


def compile_cubin(filename: str, name: str) -> bytes:
    """The cubin of one instantiation, built as CuPy builds it (name expression, options)."""
    src = kernel_source(filename).encode()
    prog = ctypes.c_void_p()
    _check(NVRTC.nvrtcCreateProgram(ctypes.byref(prog), src, filename.encode(), 0, None, None), "create")
    _check(NVRTC.nvrtcAddNameExpression(prog, name.encode()), "name expression", prog)
    opts = [*FILE_OPTIONS.get(filename, ()), "-arch=sm_90", "-ftz=true", f"-I{CUDA_INCLUDE}"]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    _check(NVRTC.nvrtcCompileProgram(prog, len(opts), arr), f"compile {name}", prog)
    size = ctypes.c_size_t()
    _check(NVRTC.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "cubin size", prog)
    buf = ctypes.create_string_buffer(size.value)
    _check(NVRTC.nvrtcGetCUBIN(prog, buf), "cubin", prog)
    NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.raw


def resources_of(cubin: bytes, sass_path: str | None) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        env = {**os.environ, "PATH": os.path.dirname(CUOBJDUMP) + os.pathsep + os.environ.get("PATH", "")}
        res = subprocess.run([CUOBJDUMP, "-res-usage", f.name], capture_output=True, text=True, env=env).stdout
        if sass_path:
            sass = subprocess.run([CUOBJDUMP, "-sass", f.name], capture_output=True, text=True, env=env).stdout
            if "fatal" in sass or "Function" not in sass:
                raise RuntimeError(f"cuobjdump -sass gave no code (is nvdisasm beside cuobjdump? pip: nvidia-cuda-nvdisasm)")
            # drop addresses and the encoding comments so two builds diff by instruction
            lines = [re.sub(r"/\*[0-9a-f]{4,}\*/", "", ln).split(";")[0].strip() for ln in sass.splitlines()]
            Path(sass_path).write_text("\n".join(ln for ln in lines if ln) + "\n")
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", res)
    return f"REG {m.group(1):>3} STACK {m.group(2):>4} LOCAL {m.group(4):>4}" if m else res.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sass", help="write each instantiation's SASS into this folder")
    ap.add_argument("--only", action="append", default=[], help="keep names containing this (repeatable)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    items = all_instantiations()
    if args.only:
        items = [x for x in items if any(s in x[1] or s in x[0] for s in args.only)]
    if args.sass:
        os.makedirs(args.sass, exist_ok=True)

    def one(item: tuple[str, str]) -> str:
        filename, name = item
        sass = os.path.join(args.sass, re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".sass") if args.sass else None
        try:
            return f"{resources_of(compile_cubin(filename, name), sass)}  {filename}: {name}"
        except Exception as exc:  # report every failure, not just the first
            return f"FAILED {filename}: {name}\n{exc}"

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        lines = list(pool.map(one, items))
    failed = [ln for ln in lines if ln.startswith("FAILED")]
    print("\n".join(lines))
    print(f"{len(items) - len(failed)} of {len(items)} instantiations compiled")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
