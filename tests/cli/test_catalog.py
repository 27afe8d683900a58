"""Tests of rooflab/cli/catalog.py: `rooflab list gpus` and `rooflab list models` show every bundled spec."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.load import available


runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_list_gpus_and_models():
    gpus = invoke("list", "gpus")
    assert gpus.exit_code == 0 and "h100-sxm" in gpus.stdout and "295 FLOP/B" in gpus.stdout
    models = json.loads(invoke("list", "models", "--format", "json").stdout)
    assert {m["name"] for m in models} >= {"llama-3-8b", "mixtral-8x7b", "gemma-2-9b"}


BUNDLED = available("models")


def test_list_models_shows_every_bundled_model():
    result = runner.invoke(app, ["list", "models", "--format", "json"])
    assert result.exit_code == 0
    listed = {row["name"]: row for row in json.loads(result.stdout)}
    assert set(listed) == set(BUNDLED)
    assert listed["deepseek-v3"]["kv_bytes_per_token_fp16"] == 70_272
