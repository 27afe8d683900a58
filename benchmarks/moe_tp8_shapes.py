"""DeepSeek-V3's experts at TP 8 (every GPU holds all 256 routed experts, each 1/8 wide: moe ffn 2048 / 8 = 256), as
the dstack DeepSeek-R1 rows run them (vLLM / SGLang --tp 8, no EP): benchmarks/moe_gemm.py's method and columns at
that shard, fp8 e4m3 and bf16, T = 32 / 64 / 128 / 512 tokens (8 pairs a token, balanced over the 256 experts).

    python3 benchmarks/moe_tp8_shapes.py --out DIR [--commit SHA]     # writes DIR/h200-moe-gemm.csv
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("moe_gemm", Path(__file__).with_name("moe_gemm.py"))
moe_gemm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(moe_gemm)
#: name, shard, experts a GPU, top-k, EP, hidden, ffn a GPU, dtypes (moe_gemm.CONFIGS' form)
moe_gemm.CONFIGS = (("deepseek-v3", "tp8", 256, 8, 1, 7168, 256, ("fp8_e4m3", "bf16")),)
moe_gemm.TOKENS = (32, 64, 128, 512)

if __name__ == "__main__":
    moe_gemm.main()
