"""rooflab.step.engine_kernels: the kernels an engine runs at its release, one resolver for every command."""

import json

import pytest

from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.step import OWN_KERNELS, DecodeAttention, MoeKernel, engine_kernels, step_report
from rooflab.vocab import ENGINE_RELEASES, Engine
from tests.support import invoke

H200 = "h200-sxm"


@pytest.fixture(scope="module")
def h200():
    return load_gpu(H200)


def test_no_engine_is_rooflabs_own_step(h200):
    k = engine_kernels(load_model("mixtral-8x7b"), h200, Deployment(tensor_parallel=2))
    assert k is OWN_KERNELS and k.note == ""
    assert (k.decode_attention, k.moe_kernel) == (DecodeAttention.shared, MoeKernel.torch_grouped)


def test_a_version_without_an_engine_is_refused(h200):
    with pytest.raises(InputError, match="needs an engine"):
        engine_kernels(load_model("llama-3-8b"), h200, Deployment(), None, "0.9.0")


@pytest.mark.parametrize("bad", ["lmdeploy", 3, ""])
def test_an_unknown_engine_is_refused(h200, bad):
    with pytest.raises(InputError, match="engine"):
        engine_kernels(load_model("llama-3-8b"), h200, Deployment(), bad)


@pytest.mark.parametrize("model, tp, version, expected", [
    # TensorRT-LLM before 0.8 has no XQA: masked MHA for every GQA model (attention.py's _XQA_FIRST).
    ("llama-2-70b", 2, "0.5.0", DecodeAttention.per_query_head),
    # 0.8-0.9: XQA's precompiled kernels take 8 query heads a KV head at head dim 128 (Llama-2-70B: 64 / 8).
    ("llama-2-70b", 1, "0.9.0", DecodeAttention.shared),
    # Mistral-7B's group is 4 (32 / 8): no precompiled XQA kernel, masked MHA.
    ("mistral-7b-v0.1", 1, "0.9.0", DecodeAttention.per_query_head),
    # MHA (Llama-2-7B, 32 / 32): a KV head is its own group, nothing to read twice.
    ("llama-2-7b", 1, "0.5.0", DecodeAttention.shared),
    # after 0.9 (and the default, ENGINE_RELEASES's 1.0): shared.
    ("mistral-7b-v0.1", 1, None, DecodeAttention.shared),
])
def test_tensorrt_llm_decode_attention_by_release(h200, model, tp, version, expected):
    k = engine_kernels(load_model(model), h200, Deployment(tensor_parallel=tp), "trt-llm", version)
    assert k.engine is Engine.trtllm and k.decode_attention is expected
    assert k.version == (version or ENGINE_RELEASES[Engine.trtllm])


def test_experts_follow_the_release_facts(h200):
    """The facts moe_kernel.py read from the wheels: vLLM 0.6.3.post1 shipped no H200 file for Mixtral TP 2 bf16
    (E=8, N=7168), SGLang 0.4.3.post2 did."""
    mixtral, dep = load_model("mixtral-8x7b"), Deployment(tensor_parallel=2)
    old = engine_kernels(mixtral, h200, dep, "vllm", "0.6.3")
    new = engine_kernels(mixtral, h200, dep, "sglang", "0.4.3.post2")
    assert old.moe_kernel is MoeKernel.default_config and new.moe_kernel is MoeKernel.tuned
    assert "shipped no E=8,N=7168,device_name=NVIDIA_H200.json" in old.moe_reason
    assert "experts default_config" in old.note and "experts tuned" in new.note


def test_a_dense_model_notes_no_expert_kernel(h200):
    k = engine_kernels(load_model("llama-2-70b"), h200, Deployment(tensor_parallel=2), "tensorrt-llm", "0.5.0")
    assert k.moe_reason == "" and "experts" not in k.note and "per_query_head" in k.note


def test_step_report_with_an_engine_is_the_explicit_kernels(h200):
    model, dep = load_model("llama-2-70b"), Deployment(tensor_parallel=2, kv_cache_dtype="fp8_e4m3")
    by_engine = step_report(model, h200, 512, 1152, deployment=dep, engine="tensorrt-llm", engine_version="0.5.0")
    explicit = step_report(model, h200, 512, 1152, deployment=dep, decode_attention="per_query_head",
                           sampler="unpriced")
    own = step_report(model, h200, 512, 1152, deployment=dep)
    assert by_engine.t_predicted_s == explicit.t_predicted_s
    assert by_engine.t_predicted_s > 1.5 * own.t_predicted_s          # the KV read 8 times over dominates
    assert by_engine.notes[-1].startswith("kernels: tensorrt-llm 0.5.0's")
    assert by_engine.decode_attention == "per_query_head" and own.decode_attention == "shared"


def test_a_kernel_that_contradicts_the_engine_is_refused(h200):
    with pytest.raises(InputError, match="contradicts tensorrt-llm 0.5.0"):
        step_report(load_model("llama-2-70b"), h200, 8, 1024, deployment=Deployment(tensor_parallel=2),
                    engine="tensorrt-llm", engine_version="0.5.0", decode_attention="shared")


def _args(*extra):
    return ("-m", "llama-2-70b", "-g", H200, "-tp", "2", "-b", "64", "--context-len", "1152", "--phase", "step",
            "--engine", "tensorrt-llm", "--engine-version", "0.5.0", *extra)


def test_report_explain_and_the_api_give_one_number(h200):
    """One path: report --phase step, explain --phase step and step_report(engine=...) agree."""
    r = invoke("report", *_args("-f", "json"))
    e = invoke("explain", *_args("--json"))
    assert r.exit_code == 0 and e.exit_code == 0, (r.stderr, e.stderr)
    api = step_report(load_model("llama-2-70b"), h200, 64, 1152, deployment=Deployment(tensor_parallel=2),
                      engine="tensorrt-llm", engine_version="0.5.0")
    rep, exp = json.loads(r.stdout), json.loads(e.stdout)
    assert rep["t_predicted_s"] == pytest.approx(api.t_predicted_s, rel=1e-12)
    assert exp["t_predicted_s"] == pytest.approx(api.t_predicted_s, rel=1e-12)
    assert rep["decode_attention"] == "per_query_head"
    assert any(n.startswith("kernels: tensorrt-llm 0.5.0's") for n in exp["notes"])


@pytest.mark.parametrize("args, message", [
    (("report", "--engine", "vllm"), "--engine applies to --phase step only"),
    (("report", "--phase", "step", "--engine", "lmdeploy"), "not an engine rooflab models"),
    (("report", "--phase", "step", "--engine", "vllm", "--engine-version", "latest"), "not an engine release"),
    (("report", "--phase", "step", "--engine-version", "0.9.0"), "needs an engine"),
    (("explain", "--engine", "vllm"), "step"),
    (("serve", "--engine-version", "x.y"), "not an engine release"),
    (("report", "--phase", "step", "--engine", "vllm", "--engine-version", "0.7.3junk"), "not an engine release"),
    (("report", "--phase", "step", "--engine", "sglang", "--engine-version", "v1"), "not a sglang release"),
    (("serve", "--engine", "tensorrt-llm", "--engine-version", "V1"), "--engine-version"),
])
def test_bad_engine_words_exit_2_naming_the_option(args, message):
    r = invoke(*args)
    assert r.exit_code == 2 and message in " ".join(r.stderr.split()), r.stderr


def test_serve_prices_the_engines_release_kernels():
    r = invoke("serve", "-m", "llama-2-70b", "-g", H200, "-tp", "2", "--engine", "tensorrt-llm",
               "--engine-version", "0.5.0", "--max-concurrency", "8")
    plain = invoke("serve", "-m", "llama-2-70b", "-g", H200, "-tp", "2", "--engine", "tensorrt-llm",
                   "--max-concurrency", "8")
    assert r.exit_code == 0 and plain.exit_code == 0, (r.stderr, plain.stderr)
    text = " ".join(r.stdout.split())                  # the table wraps with the terminal's width
    assert "decode attention per_query_head" in text and "per_query_head" not in plain.stdout


@pytest.mark.parametrize("bad", ["x", "latest", 1 + 2j, b"0.9", 0.9, "9" * 80, "0.7.3 ; x", "0.7xyz", "0.9.0-",
                                 "\uff10.9", "\u0660.\u0669", "0.\uff19.0", "0.9+\u212a"])   # digits outside ASCII (D27)
def test_the_api_checks_the_release_as_the_cli_does(h200, bad):
    model = load_model("llama-3-8b")
    for call in (lambda: engine_kernels(model, h200, Deployment(), "vllm", bad),
                 lambda: step_report(model, h200, 1, 1024, engine="vllm", engine_version=bad)):
        with pytest.raises(InputError, match="engine version"):
            call()
    from rooflab.serve import Scheduler

    with pytest.raises(InputError, match="scheduler version"):
        Scheduler(version=bad)
    assert Scheduler(version=" 0.5.12 ").version == "0.5.12" and Scheduler().version == ENGINE_RELEASES[Engine.vllm]
