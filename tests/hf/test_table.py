"""Tests of rooflab/hf/table.py: the dispatch table names a reader for every architecture the real files of
tests/data/hf_configs give, and each of those files reads, reports and plans through the CLI (`rooflab report
--model <config.json>`, `rooflab capacity --model <config.json>`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.hf.table import ARCHITECTURES

CONFIGS = Path(__file__).parent.parent / "data" / "hf_configs"
REAL = sorted(p.name for p in CONFIGS.glob("*.json"))
runner = CliRunner()


def test_every_real_file_names_an_architecture_in_the_table():
    named = {json.loads((CONFIGS / name).read_text())["architectures"][0] for name in REAL}
    assert named <= set(ARCHITECTURES), sorted(named - set(ARCHITECTURES))
    # the families of issue 28 each have a real file, but Cohere2, GraniteMoeShared and Granite's dense model
    assert {"Phi3ForCausalLM", "CohereForCausalLM", "GraniteMoeForCausalLM", "Olmo2ForCausalLM",
            "Glm4MoeForCausalLM", "MiniMaxM2ForCausalLM", "DeepseekV32ForCausalLM",
            "LlavaForConditionalGeneration", "Qwen3VLForConditionalGeneration"} <= named


#: The files issue 28 added, each through report and capacity on 8 H200s (a TP size that splits every one's heads).
NEW = ["phi-3.5-mini-instruct.json", "phi-4-mini-instruct.json", "aya-23-8b.json", "olmo-2-1124-7b.json",
       "granite-3.1-1b-a400m-instruct.json", "glm-4.7-fp8.partial.json", "minimax-m2.5.partial.json",
       "deepseek-v3.2.json", "llava-1.5-7b.json", "qwen3-vl-8b-instruct.partial.json", "llama-3.2-1b-instruct.json"]


@pytest.mark.parametrize("name", NEW)
def test_a_real_config_through_report_and_capacity(name):
    path = CONFIGS / name
    if not path.is_file():
        pytest.skip(f"{name} not collected")
    for args in (["report", "--model", str(path), "--seq-len", "2048"],
                 ["capacity", "--model", str(path), "--gpu", "h200-sxm", "--tp", "8"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{' '.join(args)}: {result.output}"
        text = " ".join(result.output.split())    # the title wraps where the path's length puts it
        assert "parameters derived" in text or "KV per token" in text
