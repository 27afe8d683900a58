"""Measuring on a real GPU: one timing module (CuPy and torch, eager and CUDA graphs), the cases a sweep times,
the runners (rooflab's kernels and PyTorch's), calibration of the ceilings, and the multi-GPU bench
(distributed/). CuPy and torch are imported lazily, where a measurement starts; the files written are read and
fitted by rooflab.fit, which needs no GPU."""
