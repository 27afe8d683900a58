"""Tests of rooflab/cli/numerics.py: `rooflab numerics`, its table, JSON and bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.numerics import expected_max_normal, expected_max_normal_exact


runner = CliRunner()


# --- 7. CLI and the core's imports ---------------------------------------------------------------

def test_cli_numerics_table():
    r = runner.invoke(app, ["numerics", "--dtype", "fp16", "--seq-len", "8192"])
    assert r.exit_code == 0, r.output
    for needle in ("fp16", "11.0901", "-17.3287", "-9.7041", "3.6882", "65504", "N=8192"):
        assert needle in r.stdout, needle


def test_cli_numerics_json():
    r = runner.invoke(app, ["numerics", "--dtype", "bf16", "--seq-len", "4096", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["dtype"] == "bf16" and doc["seq_len"] == 4096
    assert round(doc["overflow_logit"], 2) == 88.72
    assert doc["expected_max_logit"] == pytest.approx(expected_max_normal_exact(4096))
    assert doc["expected_max_logit_asymptotic"] == pytest.approx(expected_max_normal(4096))


@pytest.mark.parametrize("args, needle", [
    (["--seq-len", "1"], "--seq-len"),
    (["--dtype", "tf32"], "tf32"),
    (["--logit-std", "0"], "--logit-std"),
    (["--logit-std", "1e308"], "--logit-std"),
    (["--dtype", "int8"], "int8"),
])
def test_cli_numerics_bad_input(args, needle):
    r = runner.invoke(app, ["numerics", *args])
    assert r.exit_code == 2, r.output
    err = r.stderr.strip().splitlines()
    assert 1 <= len(err) <= 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
