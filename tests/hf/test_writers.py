"""Hugging Face config.json as a model spec: the configs' own rules, strict reading, and errors naming file,
field and value (exit 2 from the CLI).

Configs here are small dicts written for the rule under test (a real file's fields where one is at hand);
the real files are read in tests/hf/test_init.py (test_real_config_loads_to_the_bundled_spec).
"""

from __future__ import annotations

import dataclasses
import json

from rooflab import SpecError, available, load_model
from rooflab.hf import export_hf_config
from rooflab.hf.writers import WRITERS
from support import read_config


def test_every_writer_that_takes_a_bundled_model_writes_it_back_exactly():
    """Whatever architecture a spec is written as, a config the writer accepts reads back to the same spec."""
    written = 0
    for name in available("models"):
        m = load_model(name)
        for arch in WRITERS:
            try:
                data = export_hf_config(m, arch)
            except SpecError:
                continue                                          # the architecture cannot hold it: refused
            back = read_config(json.loads(json.dumps(data)))
            assert dataclasses.replace(back, name=m.name, display_name=m.display_name, source=m.source,
                                       num_parameters=m.num_parameters, parameters_note=m.parameters_note) == m
            written += 1
    assert written >= 2 * len(available("models"))
