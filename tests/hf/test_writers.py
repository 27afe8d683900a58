"""Tests of rooflab/hf/writers.py: whatever architecture a bundled model is written as, a config the writer
accepts reads back to the same spec.
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
