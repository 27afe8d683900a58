"""Tests of rooflab/cli/schema.py: the JSON Schemas shipped in rooflab/schemas are what the specs derive
(regenerated with `rooflab schema NAME -o rooflab/schemas/NAME.schema.json`).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.schema import FORMATS, json_schema, schema_path, schema_text


jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in rooflab[test]; install it to check the schemas")

runner = CliRunner()


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_shipped_schema_is_what_the_specs_derive(name):
    """The shipped file is regenerated with `rooflab schema NAME -o rooflab/schemas/NAME.schema.json`."""
    assert schema_path(name).read_text() == schema_text(name)
    jsonschema.Draft202012Validator.check_schema(json_schema(name))
    r = runner.invoke(app, ["schema", name])
    assert r.exit_code == 0 and json.loads(r.stdout) == json_schema(name)
