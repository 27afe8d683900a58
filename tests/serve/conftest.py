import pytest

from rooflab import load_gpu, load_model
from rooflab.deployment import Deployment
from rooflab.serve import Lengths, Replica, Workload


@pytest.fixture(scope="session")
def replica():
    """Llama-3-8B bf16 on one H200 (fitted: floors and predictions), 1k/1k drawn as InferenceX draws them."""
    return Replica.build(load_model("llama-3-8b"), load_gpu("h200-sxm"), Deployment(),
                         Workload(Lengths.inferencex_random(1024, 0.8), Lengths.inferencex_random(1024, 0.8)))
