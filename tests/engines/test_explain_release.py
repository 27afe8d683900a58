"""Tests of the release a start-up log states (rooflab/engines/logrules.py 'release', explain.py): vLLM's engine line
'Initializing a V1 LLM engine (v0.15.0) with config:' sets EngineSettings.release for the replay's modelled terms,
within the accounting's releases; --engine-version saying another is a contradiction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import parse_accounting
from rooflab.engines.explain import explain_log
from rooflab.engines.logrules import settings_of
from rooflab.engines.logs import read_log, read_startups
from rooflab.engines.settings import EngineSettings
from rooflab.errors import InputError

LOGS = Path(__file__).resolve().parents[1] / "data" / "engine_logs"
QWEN3_30B_H200 = LOGS / "heldout5" / "vllm-v1-qwen3-30b-a3b-2507-h200-util050-maxlen16000.log"


@pytest.mark.parametrize("line, release", [
    ("INFO 02-03 09:11:58 [core.py:96] Initializing a V1 LLM engine (v0.15.0) with config: model='m'", "0.15.0"),
    ("INFO 05-01 [llm_engine.py:161] Initializing an LLM engine (v0.4.1) with config: model='m'", "0.4.1"),
    ("Initializing a V1 LLM engine (v0.8.0rc3.dev5+g5eeabc2a.d20250318) with config: model='m'",
     "0.8.0rc3.dev5+g5eeabc2a.d20250318"),
    ("INFO vLLM API server version 0.10.1.1", None)])
def test_the_engine_line_states_the_release(line, release):
    assert settings_of(line).get("release") == release


def test_the_logged_release_reaches_the_modelled_activation():
    """Set 5's Qwen3-30B-A3B H200 log (in-sample) states v0.15.0: its unprinted activation peak is then
    tests/engines/test_profile.py's hand figure for v0.15.0, 6,516,113,408 B (the full sort, the MoE workspaces)."""
    x = explain_log(read_log(QWEN3_30B_H200), load_model("qwen3-30b-a3b"), load_gpu("h200"),
                    EngineSettings(parse_accounting("vllm", None)))
    assert x.reproduced.term("activation_peak").bytes == 6_516_113_408
    assert x.reproduced.releases == "vLLM V1 v0.9.1 - v0.20 at v0.15.0"
    assert x.settings_taken[0].startswith("release v0.15.0: from the log (line 6:")


def test_a_contradicting_engine_version_is_refused():
    with pytest.raises(InputError, match=r"--engine-version 0.19.0 contradicts the log's v0.15.0 \(line 6:"):
        explain_log(read_log(QWEN3_30B_H200), load_model("qwen3-30b-a3b"), load_gpu("h200"),
                    EngineSettings(parse_accounting("vllm", "0.19.0"), release=(0, 19, 0)),
                    given=frozenset({"accounting"}))


def test_a_release_past_the_range_is_named_and_the_newest_modelled():
    log = read_log(LOGS / "heldout4" / "vllm-v1-qwen3-8b-t4x2-tp2-maxlen8192.log")
    x = explain_log(log, load_model("qwen3-8b"), load_gpu("t4"), EngineSettings(parse_accounting("vllm", None)))
    assert x.reproduced.releases == "vLLM V1 v0.9.1 - v0.20"
    assert "release v0.22.0: from the log" in x.settings_taken[0]
    assert "outside vllm-v1's releases (vLLM V1 v0.9.1 - v0.20): its newest is modelled" in x.settings_taken[0]


@pytest.mark.parametrize("log, accounting", [
    # the release picks the accounting among the generation the formats show (vocab.RELEASE_RANGE)
    ("heldout2/vllm-v0-llama-3-8b-rtx3090-three-startups.log", "vllm-v0.2"),     # V0 v0.4.1: before PR #9352
    ("heldout5/vllm-v0-0.6.3.post1-qwen2.5-7b-rtx4090-wsl-eager-util095.log", "vllm-v0.2"),
    ("heldout5/vllm-v0-0.8.1-qwen2.5-7b-a10g-maxlen6600.log", "vllm-v0"),         # V0 under v0.8.1
    ("heldout5/vllm-v1-0.8.4-deepseek-r1-h800x16-tp16-ep-ray-maxlen32768.log", "vllm-v0.8"),   # V1 v0.8.4
    ("heldout5/vllm-v1-qwen3-30b-a3b-2507-h200-util050-maxlen16000.log", "vllm-v1"),
    ("heldout4/vllm-v1-qwen3-8b-t4x2-tp2-maxlen8192.log", "vllm-v1")])             # v0.22.0: past, the formats'
def test_the_logged_release_picks_the_accounting(log, accounting):
    assert {str(s.accounting) for s in read_startups(LOGS / log)} == {accounting}


def test_a_callers_release_picks_the_accounting_where_the_log_states_none():
    """Set 2's Qwen3-30B-A3B 4x A10 log (V1 v0.8.5 by its post; no engine line): its formats read as vllm-v1; with
    EngineSettings.release 0.8.5 the replay follows vllm-v0.8, the accounting that release used."""
    log = read_log(LOGS / "heldout2" / "vllm-v1-qwen3-30b-a3b-a10x4-tp4.log")
    assert log.setting("release") is None and str(log.accounting) == "vllm-v1"
    model, gpu = load_model("qwen3-30b-a3b"), load_gpu("a10")
    settings = EngineSettings(parse_accounting("vllm", "v0.8"), tensor_parallel=4, max_model_len=8192, release="0.8.5")
    assert explain_log(log, model, gpu, settings).reproduced.accounting == "vllm-v0.8"
    plain = EngineSettings(parse_accounting("vllm", "v0.8"), tensor_parallel=4, max_model_len=8192)
    assert explain_log(log, model, gpu, plain).reproduced.accounting == "vllm-v1"
