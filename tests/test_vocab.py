"""The closed sets (rooflab/vocab.py): what each layer kind's cache keeps, asked of the kind; engine releases read
one way."""

from __future__ import annotations

import pytest

from rooflab.errors import InputError
from rooflab.vocab import RELEASE_PART_LIMIT, LayerKind, check_engine_release, engine_release, release_of


def test_layer_kinds_say_what_their_cache_keeps():
    """A shared prefix serves the kinds whose cache holds every earlier token; a split by position shares out
    every softmax kind's pages but not a linear layer's fixed state."""
    assert {k for k in LayerKind if k.keeps_every_token} == {LayerKind.full, LayerKind.mla}
    assert {k for k in LayerKind if not k.splits_by_position} == {LayerKind.linear}


# --- engine releases: one reading for the check and the numbers (hostile session12 D35, D36) ---------------------

@pytest.mark.parametrize("text, numbers", [
    ("0.8.4", (0, 8, 4)), ("v0.8.4", (0, 8, 4)), ("V0.8.4", (0, 8, 4)), (" V0.4.6.post2 ", (0, 4, 6)),
    ("V0.10.1", (0, 10, 1)), ("0.7.4.dev181+gf35f8e22", (0, 7, 4)), ("V0.11.0RC1", (0, 11, 0)), ("V99.0", (99, 0))])
def test_a_release_reads_as_the_check_takes_it_whatever_the_case_of_its_v(text, numbers):
    """D35: the check took 'V0.8.4' (its pattern ignored case) but the number reader's 'v?' did not, so a capital V
    read as no release at all (capacity then planned vLLM's default, under --engine sglang too)."""
    assert engine_release(check_engine_release(text, "--engine-version")) == numbers
    assert release_of(text, "--engine-version") == numbers


@pytest.mark.parametrize("text", ["0.0.1", "0.30", "0.11.0rc1", "0.8.5.dev1", "0.7.4.dev0+g1234", "0.10.1+cu128",
                                  "0.6.3.post1", "v0.10.1a", "0.10.1-post1", "0.10.1rc", "V0.5.3", "V1", "v1 (0.11+)"])
def test_every_release_the_check_takes_has_numbers_unless_it_is_vllms_generation(text):
    taken = check_engine_release(text)
    assert (engine_release(taken) is None) == (taken.lower() in ("v1", "v1 (0.11+)"))


@pytest.mark.parametrize("text", ["0.10.99999", "0.10." + "9" * 58, "10000.0"])
def test_a_release_number_past_the_limit_is_refused_naming_the_option(text):
    """D36: '0.10.99999' passed the check and was refused later as 'release (EngineSettings.release) must be ...'."""
    with pytest.raises(InputError, match=rf"^--engine-version: '0\.10\.99|^--engine-version: '10000") as exc:
        release_of(text, "--engine-version")
    assert str(exc.value).endswith(f"is not an engine release: each of its numbers is below {RELEASE_PART_LIMIT:,}")


def test_fact_of_line_takes_a_fact_within_its_minor_line_only():
    """A fact read at 0.7.3 holds for 0.7.x of the same engine, not 0.8.0 or another engine; no release, no fact."""
    from types import SimpleNamespace

    from rooflab.vocab import Engine, engine_name, fact_of_line

    facts = (SimpleNamespace(engine="vllm", version="0.7.3"), SimpleNamespace(engine="sglang", version="0.4.3.post2"))
    assert fact_of_line(facts, "vllm", "0.7.0") is facts[0]
    assert fact_of_line(facts, Engine.vllm, "0.7.9.dev1") is facts[0]
    assert fact_of_line(facts, "SGLang", "0.4.6") is facts[1]
    for engine, version in (("vllm", "0.8.0"), ("vllm", "0.6.9"), ("sglang", "0.7.3"), ("vllm", "v1"),
                            ("vllm", None), ("", "0.7.3")):
        assert fact_of_line(facts, engine, version) is None
    assert engine_name(None) == "" and engine_name(Engine.sglang) == "sglang"
