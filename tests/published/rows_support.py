"""What the published-reader tests share: a demo source, the kernel CSV header, a good row, and a folder of them."""

from __future__ import annotations

from pathlib import Path

from rooflab.published import KernelRow, load_published


HEADER = ("source,gpu,implementation,phase,dtype,batch,num_qo_heads,num_kv_heads,seq_len_q,seq_len_kv,head_dim,"
          "head_dim_v,causal,window,page_size,metric,value,note")


GOOD_ROW = "demo,h100-sxm,fa3,prefill,fp16,1,16,16,16384,16384,128,,false,,,tflops,648,panel (c)"


SOURCES = """sources:
  demo:
    title: "A demo source"
    url: "https://example.org/demo"
    section: "Figure 1"
    date: "2024-07-11"
    gpus: [h100-sxm, rtx-4090]
    implementation: "FlashAttention-3"
    convention: fa
    timing: "forward only"
    read_by: "bar labels"
"""


def _folder(tmp_path: Path, rows: list[str], sources: str = SOURCES, header: str = HEADER) -> Path:
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "sources.yaml").write_text(sources)
    (tmp_path / "kernels" / "demo.csv").write_text("\n".join([header, *rows]) + "\n")
    return tmp_path


def _one_row(tmp_path: Path, row: str = GOOD_ROW, **kw) -> KernelRow:
    (only,) = load_published(_folder(tmp_path, [row], **kw)).kernels
    return only


def _with(column: str, value: str) -> str:
    """GOOD_ROW with one cell replaced."""
    cells = GOOD_ROW.split(",")
    cells[HEADER.split(",").index(column)] = value
    return ",".join(cells)
