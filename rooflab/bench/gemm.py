"""Moved: the gemm section to rooflab.measure.distributed.gemm, the family's fit to rooflab.fit.gemm_fit. These names
stay here for one release."""

from ..fit.gemm_fit import IMPL, fit_gemm, model_times
from ..measure.distributed.gemm import (MIN_STREAM_BYTES, M_BF16, M_FP16, M_TINY, SHAPES, SMALL_BATCHES, TINY_SHAPES,
                                        section_gemm)

__all__ = ["IMPL", "MIN_STREAM_BYTES", "M_BF16", "M_FP16", "M_TINY", "SHAPES", "SMALL_BATCHES", "TINY_SHAPES",
           "fit_gemm", "model_times", "section_gemm"]
