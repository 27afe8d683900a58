"""The old home of measuring and fitting, kept as aliases for one release: the modules here re-export from
rooflab.measure (needs a GPU: timing, cases, runners, calibrate, the distributed bench) and rooflab.fit (NumPy
only: records, fitting, validation); `from rooflab.bench.X import Y` and `python -m rooflab.bench.dist_worker`
keep working."""
