"""Fitting and checking against measurements, NumPy only (no GPU): the measurement files, the fitted time models
(c0 + t_model / eta and the parallelism model), the collective and GEMM fits, validation of predictions against
measured times, and published measurements against their floors. The measuring itself is rooflab.measure."""
