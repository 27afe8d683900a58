"""Strict YAML (rooflab/files/strict_yaml.py): YAML 1.2's plain scalars, the 1.1 forms refused with how to write
them, no duplicate keys, aliases or deep nesting, and the libyaml fast path reading as the strict loader does."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rooflab.errors import SpecError
from rooflab.files import parse_yaml
from rooflab.load import data_dir, load_gpu, load_model


@pytest.mark.parametrize("text, needle", [
    ("name: [unclosed\n", "malformed YAML"),
    ("- just\n- a list\n", "mapping"),
    ("name: a\nname: b\n", "duplicate key 'name'"),
    ("", "mapping"),
])
def test_malformed_file(tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_model(str(path))
    assert str(path) in str(info.value) and needle in str(info.value)


def test_scientific_notation_without_sign_is_a_number(tmp_path):
    # YAML 1.1 reads 3.35e12 as a string; rooflab's loader reads it as the number people mean
    text = (data_dir("hardware") / "h100-sxm.yaml").read_text().replace("name: h100-sxm", "name: x")
    path = tmp_path / "x.yaml"
    path.write_text(text)
    assert load_gpu(str(path)).hbm_bandwidth_bytes_per_s == 3.35e12


@pytest.mark.parametrize("text", ["a: 0132", "a: 2:12", "a: 1_000", "a: 0x84", "a: yes", "a: off"])
def test_yaml_1_1_forms_are_refused_with_how_to_write_them(text):
    with pytest.raises(SpecError) as err:
        parse_yaml(text, "x.yaml")
    assert "ambiguous" in str(err.value) and "x.yaml" in str(err.value)


@pytest.mark.parametrize("text, value", [("a: 132", 132), ("a: 3.35e12", 3.35e12), ("a: 2026-11-30", "2026-11-30"),
                                         ("a: true", True), ("a: '0132'", "0132"), ("a: n", "n")])
def test_yaml_1_2_forms_read_as_written(text, value):
    assert parse_yaml(text, "x.yaml")["a"] == value


def test_yaml_reader_refuses_what_a_spec_never_needs(tmp_path):
    """Complex keys, aliases (billion laughs) and deep nesting: one-line errors naming the file, quickly."""
    from fuzz_support import bounded

    from rooflab.errors import SpecError
    from rooflab.load import load_gpu

    laughs = ["name: x", 'a: &a ["lol", "lol"]'] + [f"{c}: &{c} [" + ", ".join([f"*{p}"] * 10) + "]"
                                                   for p, c in zip("abcdefghi", "bcdefghij")]
    cases = {"complex.yaml": ("name: x\n? [a, b]\n: 1\n", "not a plain name"),
             "laughs.yaml": ("\n".join(laughs) + "\n", "an alias"),
             "deep.yaml": ("a: " + "[" * 3000 + "\n", "nested too deeply")}
    for name, (text, needle) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with bounded(), pytest.raises(SpecError) as info:    # a watchdog for an expanding load, not a speed bound
            load_gpu(path)
        assert needle in str(info.value) and name in str(info.value)


def test_the_libyaml_fast_path_reads_every_bundled_file_as_the_strict_loader_does():
    """parse_yaml goes through libyaml where a document is plain (ten times as fast: the H200 spec with its fits is
    20 KB) and falls back to the Python loader for anything it must refuse; both give the same mappings."""
    from rooflab.files import strict_yaml as load

    if load._CSpecLoader is None:
        pytest.skip("this PyYAML has no libyaml")
    files = [*sorted((ROOT_DIR / "hardware").glob("*.yaml")), *sorted((ROOT_DIR / "models").glob("*.yaml")),
             ROOT_DIR / "measurements" / "published" / "sources.yaml"]
    for path in files:
        text = path.read_text()
        assert load._fast_load(text) == yaml.load(text, Loader=load._SpecLoader), path.name
    for text, needle in (("a: &x [1]\nb: *x\n", "an alias"), ("a: 0132\n", "ambiguous"), ("a: 1\na: 2\n", "duplicate"),
                         ("a: " + "[" * 3000, "nested too deeply")):
        with pytest.raises(SpecError, match=needle):
            load.parse_yaml(text, "t.yaml")


ROOT_DIR = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("closed", [True, False])
def test_both_loaders_refuse_nesting_past_max_depth_at_the_same_node(closed):
    """A document nested MAX_DEPTH deep reads the same through libyaml and the Python loader; one level more is
    refused by both with the same message, at the same line and column (refused as met: the Python scanner no longer
    reads ahead through thousands of brackets first)."""
    from rooflab.files import strict_yaml as load

    def doc(depth: int) -> str:
        return "name: x\na: " + "[" * depth + ("]" * depth if closed else "") + "\n"

    if closed:
        assert load._fast_load(doc(load.MAX_DEPTH)) == yaml.load(doc(load.MAX_DEPTH), Loader=load._SpecLoader)
    messages = set()
    for read in (load._fast_load, lambda text: yaml.load(text, Loader=load._SpecLoader)):
        for depth in (load.MAX_DEPTH + 1, 20000):
            with pytest.raises(yaml.YAMLError) as info:
                read(doc(depth))
            messages.add((info.value.problem, info.value.problem_mark.line, info.value.problem_mark.column))
    assert len(messages) == 1 and "nested too deeply" in messages.pop()[0]
