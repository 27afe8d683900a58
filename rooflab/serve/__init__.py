"""Serving under load: an engine's scheduler, a workload and a load (a concurrency or a request rate) on one
replica of a deployment -> TTFT, TPOT, ITL, E2E and throughput, each as a floor and a prediction.

    from rooflab import load_gpu, load_model
    from rooflab.deployment import Deployment
    from rooflab.serve import Replica, Workload, steady_state, simulate, concurrency_sweep
    replica = Replica.build(load_model("llama-3-70b"), load_gpu("h100-sxm"), Deployment(tensor_parallel=8,
                            gemm_dtype="fp8_e4m3"), Workload.fixed(1024, 1024))
    steady_state(replica, 64).to_frame()           # closed form (steady.py)
    simulate(replica, ClosedLoop(64)).to_frame()   # discrete-event simulation on SimPy (simulate.py)
    concurrency_sweep(replica).to_frame()           # the throughput-interactivity curve (sweep.py)

Modules: scheduler.py (the engines' schedulers in their words), workload.py (lengths and arrivals as the
benchmark harnesses draw them), steptime.py (the step-time function), replica.py, steady.py, simulate.py
(decoding.py: the simulated engine's decoding requests as aggregates), metrics.py (TTFT, TPOT, ITL, E2E as vllm
bench serve defines them; a simulated run's results), sweep.py (curves and SLO search), published.py (the
published serving rows against the floors and predictions).
"""

from .scheduler import Engine, Scheduler
from .workload import ClosedLoop, Lengths, RequestRate, Workload
from .steptime import StepTimes, TableStepTimes, step_times
from .replica import Replica
from .steady import Steady, SteadyState, steady_state
from .simulate import Simulation, simulate
from .sweep import ConcurrencySweep, SloAnswer, concurrency_sweep, slo_search

__all__ = ["Simulation", "simulate", "ConcurrencySweep", "SloAnswer", "concurrency_sweep", "slo_search", "Engine", "Scheduler", "ClosedLoop", "Lengths", "RequestRate", "Workload", "TableStepTimes",
           "StepTimes", "step_times", "Replica", "Steady", "SteadyState", "steady_state"]
