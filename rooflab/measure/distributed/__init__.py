"""The multi-GPU bench (`rooflab bench --distributed`): launch.py starts torchrun and assembles the files;
worker.py is one rank (the driver); context.py the rank context and timers every section shares; ops.py the
attention ops and the model's shape; one module a section (collectives, dcp, tp, ring, gemm, step)."""
