"""rooflab's own CUDA kernels, run through CuPy, to check the cost model's predictions against.

CuPy is imported only when a kernel is called: `import rooflab.kernels` works without it, and
a call then raises rooflab.errors.MissingGpuError naming what is missing and how to install
it. Kernel sources are the .cu files beside this module, one kernel a file:

- softmax_rows.cu     row softmax, reads S once and writes P once (naive attention's middle kernel)
- flash_fwd.cu        flash attention forward, mma.sync tensor cores, online softmax, LSE out; causal,
                      sliding window, chunk (tiles outside skipped) and per-head sinks
- flash_fwd_hopper_ws.cu  flash attention forward for sm_90 (d 128): wgmma, warp-specialized; the
                      default there (flash_hopper.py launches it)
- flash_fwd_hopper.cu the plain wgmma form (tuning variants); wgmma_probe.cu a layout test aid;
                      hopper.cuh their shared helpers (common.cuh: every kernel's, the online-softmax
                      state and merge among them)
- paged_decode.cu     decode through a block table, GQA group x q_len new tokens per CTA, optional split-KV
                      partials; sliding window / chunk / sinks; fp16 / bf16 or fp8 e4m3 (uint8, per-tensor
                      scales) KV caches
- mla_decode.cu       MLA decode (absorbed form, latent 576 = 512 + 64) over a paged latent cache (pages of
                      64), bf16 / fp16 or dense fp8 e4m3, split-KV (mla.py launches it)
- mla_decode_hopper.cu  the same on Hopper's wgmma (sm_90, 16-bit caches, 64 query rows a CTA)
- merge_partials.cu   S-way merge of split-KV partials
- merge_states.cu     pairwise merge of two (O, LSE) states

Launchers (CuPy arrays in and out; shapes in each docstring):
softmax_rows, naive_attention (and its three pieces attention_scores, masked_softmax,
attention_values), flash_attention, paged_decode, paged_decode_partial, merge_partials,
merge_states, mla_decode; precompile() builds the common instantiations in parallel. Helpers for tests
and benchmarks (random inputs, NaN poisoning, paged caches, the e4m3 codec, tolerances) are in
rooflab.kernels.testing; timing (CUDA events, CUDA graphs) is rooflab.measure.timing.
"""

from .attention import (FLASH_VARIANTS, attention_scores, attention_values, flash_attention, masked_softmax,
                        naive_attention, softmax_config, softmax_rows)
from .decode import merge_partials, merge_states, paged_decode, paged_decode_partial
from .mla import mla_decode
from .precompile import precompile

__all__ = ["FLASH_VARIANTS", "attention_scores", "attention_values", "flash_attention", "masked_softmax", "merge_partials", "merge_states", "mla_decode", "naive_attention",
           "paged_decode", "paged_decode_partial", "precompile", "softmax_config", "softmax_rows"]
