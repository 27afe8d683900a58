"""Fuzzing the specs: mutated GPU and model YAMLs (through load_gpu / load_model and `--gpu FILE`), and the Python
API's constructors, `dataclasses.replace`, `Ceilings.of` and the cost functions with hostile values.

A spec that cannot be used is a SpecError (or another RooflabError) naming the file and the field;
anything else escaping (TypeError, ValueError, KeyError, RecursionError) is a failure, and so is a
bad value accepted: YAML 1.1's readings (0132 as octal, 2:12 as base 60, yes as true), a value
outside the plausible range, a string where a number belongs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fuzz_support import (HARDWARE, MODELS, Case, check_api, check_cli, finite_everywhere, fuzz_settings, scratch)
from rooflab import DType
from rooflab.errors import RooflabError
from rooflab.fields import field_docs
from rooflab.load import clear_cache, load_gpu, load_model
from rooflab.specs import AttentionHeads, GpuSpec, LayerType, ModelSpec

GPU_FILES = sorted(HARDWARE.glob("*.yaml"))
MODEL_FILES = sorted(MODELS.glob("*.yaml"))


# --- editing YAML text by top-level key -------------------------------------------------------------------------

def blocks(text: str) -> list[tuple[str | None, list[str]]]:
    """The file as (top-level key, its lines) blocks; comment lines and the like belong to key None."""
    out: list[tuple[str | None, list[str]]] = []
    for line in text.splitlines():
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*):", line)
        if m:
            out.append((m.group(1), [line]))
        elif out and (line.startswith((" ", "\t")) or not line.strip()) and out[-1][0] is not None:
            out[-1][1].append(line)
        else:
            out.append((None, [line]))
    return out


def keys_of(text: str) -> list[str]:
    return [k for k, _ in blocks(text) if k is not None]


def join(bs) -> str:
    return "\n".join(line for _, lines in bs for line in lines) + "\n"


def drop_key(text: str, key: str) -> str:
    return join([(k, lines) for k, lines in blocks(text) if k != key])


def set_key(text: str, key: str, value: str) -> str:
    """`key: value` in place of the key's line(s), the value written as given (block scalars indented)."""
    if "\n" in value:
        value = value.replace("\n", "\n  ")
    if key not in keys_of(text):                     # an optional field the file leaves out: add it
        return text.rstrip("\n") + f"\n{key}: {value}\n"
    return join([(k, [f"{key}: {value}"] if k == key else lines) for k, lines in blocks(text)])


def set_nested(text: str, key: str, sub: str, value: str) -> str:
    out = []
    for k, lines in blocks(text):
        if k == key:
            lines = [re.sub(rf"^(\s+){re.escape(sub)}:.*$", rf"\g<1>{sub}: {value}", line) for line in lines]
        out.append((k, lines))
    return join(out)


def duplicate_key(text: str, key: str) -> str:
    bs = blocks(text)
    extra = [lines for k, lines in bs if k == key]
    return join(bs + [(key, extra[0])])


# --- value pools (YAML text) -----------------------------------------------------------------------------------

#: Numbers YAML 1.1 reads as something else than YAML 1.2 (octal, base 60, underscores, hex, booleans): refused.
AMBIGUOUS = ["0132", "2:12", "0x84", "0o17", "1_000", "0b101", "+0132", "-0x1", "1:00:00", "yes", "no", "on", "off",
             "0132.5", "010e3", "1_000.5"]
#: Values no positive numeric field accepts.
BAD_NUMBERS = ["1.0e-300", "1e308", "1e400", "-1e400", ".nan", ".NaN", ".inf", "-.inf", ".Inf", "-1", "0", "-0", "0.0",
               "'132'", '"3.35e12"', "[132]", "{a: 1}", "~", "null", "", "true", "false", "1e19",
               "99999999999999999999999", "!!str 132", "!!binary aGVsbG8=", "2026-11-30", "!!timestamp 2001-12-14",
               "\U0001f4a5", "$x", "'\\frac{a}{b}'", "!!set {a, b}", "|\n132", "132 GB", "132,0", "1e3e3",
               "!!python/object/apply:os.system ['true']", "*undefined", "[]", "{}", "!!float nan", "!!float -1",
               "!!null ''", "5e-324", "-5e-324", "1.7976931348623157e308"]
#: Values that a field may take (or refuse) without harm: explicit tags and forms YAML 1.2 reads as the same number.
MAYBE_NUMBERS = ["+132", "132.0", "!!float 132", "!!int 132", "&a 132", "132.", "1.32e2", "1.32E+2"]
#: Values a free-text field (name, source) may refuse, or keep as text.
ODD_TEXTS = ["''", "' '", "123", "1e400", ".nan", "[a, b]", "{a: b}", "~", "'$\\frac{a}{b}$ {} \\\\'", "'{}'",
             "'" + "x" * 20_000 + "'", '"\\x00"', '"\\u202e"', "!!binary aGVsbG8=", "true", "2026-11-30",
             "'\u00e9\U0001f4a5'", "0132", "2:12", "yes", "|\n  multi\n  line"]

GPU_NUMERIC = ["hbm_capacity_bytes", "hbm_bandwidth_bytes_per_s", "vector_fp32_flop_per_s", "num_sms",
               "smem_per_sm_bytes", "l2_bytes", "register_file_per_sm_bytes", "boost_clock_hz", "exp_per_s",
               "interconnect_bytes_per_s"]
MODEL_NUMERIC = ["num_layers", "hidden_size", "num_qo_heads", "num_kv_heads", "head_dim", "ffn_size", "vocab_size",
                 "max_context_len", "num_parameters"]
TEXT_FIELDS = ["name", "display_name", "source"]


def _required(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


GPU_REQUIRED = _required(GpuSpec)
MODEL_REQUIRED = _required(ModelSpec)
#: Whether each field takes None (its annotation is Optional), from the specs' own field table.
GPU_DOCS = field_docs(GpuSpec)
MODEL_DOCS = field_docs(ModelSpec)


@dataclasses.dataclass
class Mutation:
    """A mutated spec file: its bytes, the strings that name what is wrong, and whether it must be refused."""

    data: bytes
    idents: list[str]
    must_fail: Optional[bool]
    what: str
    field: Optional[str] = None         # the field whose value was set, to check what was read when accepted
    value_text: Optional[str] = None


@st.composite
def mutations(draw, kind: str) -> Mutation:
    files = GPU_FILES if kind == "gpu" else MODEL_FILES
    path = draw(st.sampled_from(files))
    text = path.read_text()
    numeric = GPU_NUMERIC if kind == "gpu" else MODEL_NUMERIC
    required = GPU_REQUIRED if kind == "gpu" else MODEL_REQUIRED
    keys = keys_of(text)
    op = draw(st.sampled_from(["drop", "set-bad", "set-bad", "set-ambiguous", "set-maybe", "set-text", "duplicate",
                               "unknown", "nested", "bytes", "structure"]))
    if op == "drop":
        key = draw(st.sampled_from(keys))
        return Mutation(drop_key(text, key).encode(), [key], True if key in required else None, f"drop {key}")
    if op in ("set-bad", "set-ambiguous", "set-maybe"):
        key = draw(st.sampled_from(numeric))
        pool = {"set-bad": BAD_NUMBERS, "set-ambiguous": AMBIGUOUS, "set-maybe": MAYBE_NUMBERS}[op]
        value = draw(st.sampled_from(pool))
        docs = GPU_DOCS if kind == "gpu" else MODEL_DOCS
        optional_null = docs[key]["optional"] and value in ("~", "null", "", "!!null ''")
        must = None if op == "set-maybe" or optional_null else True
        return Mutation(set_key(text, key, value).encode(), [key], must, f"{key}: {value}", key, value)
    if op == "set-text":
        key = draw(st.sampled_from(TEXT_FIELDS))
        value = draw(st.sampled_from(ODD_TEXTS))
        return Mutation(set_key(text, key, value).encode(), [key], None, f"{key}: {value[:30]}", key, value)
    if op == "duplicate":
        key = draw(st.sampled_from(keys))
        return Mutation(duplicate_key(text, key).encode(), [key, "duplicate"], True, f"duplicate {key}")
    if op == "unknown":
        line = draw(st.sampled_from(["num_sm: 132", "hbm_bandwith_bytes_per_s: 3.35e12", "bogus: 1", "'': 1",
                                     "\u00e9: 1", "$x: 1", "'{}': 1", "Name: x", "numSms: 132", "null: 1", "1: 1",
                                     "true: 1", "num_layer: 32", "headdim: 128"]))
        key = line.split(":")[0].strip("'")
        return Mutation((text + line + "\n").encode(), [key or "''", "unknown", "None", "1", "True"], True,
                        f"unknown key {line}")
    if op == "nested":
        if kind == "gpu":
            sub = draw(st.sampled_from(["fp16", "bf16", "tf32", "fp8"]))
            value = draw(st.sampled_from(BAD_NUMBERS[:22] + AMBIGUOUS[:6]))
            mutated = set_nested(text, "dense_tensor_flop_per_s", sub, value)
            if mutated == text:
                return Mutation(text.encode(), [], False, "unchanged")
            return Mutation(mutated.encode(), ["dense_tensor_flop_per_s", sub], True,
                            f"dense_tensor_flop_per_s.{sub}: {value}")
        key = draw(st.sampled_from(["layer_types", "layer_pattern", "quantization", "num_experts", "weight_dtype"]))
        value = draw(st.sampled_from(["{}", "[]", "{full: {kind: nope}}", "{full: {kind: sliding}}",
                                      "{full: {kind: full, window: 4}}", "[nope]", "full", "{linear: fp8}",
                                      "{mlp: fp4}", "0", "-1", "fp99", "1e400", "{full: 3}", "[[full]]"]))
        # refused whatever the model: a kind that does not exist, a window on a full layer, fp4 (no such format),
        # a number or a list where a mapping or a dtype belongs
        must = True if value in ("{full: {kind: nope}}", "{full: {kind: sliding}}", "{full: {kind: full, window: 4}}",
                                 "[nope]", "{mlp: fp4}", "-1", "fp99", "1e400", "{full: 3}", "[[full]]") else None
        if key == "num_experts" and value not in ("-1", "1e400", "fp99", "[nope]", "[[full]]", "{full: 3}"):
            must = None
        return Mutation(set_key(text, key, value).encode(), [key, value], must, f"{key}: {value}")
    if op == "bytes":
        how = draw(st.sampled_from(["non-utf8", "bom", "crlf", "huge", "nul", "latin1", "empty", "comment-only",
                                    "tabs", "utf16"]))
        data = text.encode()
        if how == "non-utf8":
            data = data.replace(b"\n", b"\n# \xff\xfe\x80\n", 1)
            return Mutation(data, ["UTF-8", "utf-8", "byte"], True, how)
        if how == "latin1":
            return Mutation(text.replace("source:", "source: caf\u00e9 ", 1).encode("latin-1", "replace"),
                            ["UTF-8", "byte"], True, how)
        if how == "utf16":
            return Mutation(text.encode("utf-16"), ["UTF-8", "byte"], True, how)
        if how == "bom":
            return Mutation(b"\xef\xbb\xbf" + data, [], False, how)
        if how == "crlf":
            return Mutation(data.replace(b"\n", b"\r\n"), [], False, how)
        if how == "huge":
            return Mutation(data + b"# " + b"x" * (2 << 20) + b"\n", ["MiB", "large"], True, how)
        if how == "nul":
            return Mutation(data.replace(b"\n", b"\n\x00\n", 1), ["line", "character", "YAML"], True, how)
        if how == "empty":
            return Mutation(b"", ["mapping", "empty"], True, how)
        if how == "comment-only":
            return Mutation(b"# nothing here\n", ["mapping", "empty"], True, how)
        return Mutation(data.replace(b"\nnum", b"\n\tnum").replace(b"\nhidden", b"\n\thidden"), ["line", "tab"],
                        True, how)
    how = draw(st.sampled_from(["list", "scalar", "complex-key", "deep", "laughs", "alias-field", "anchor-merge",
                                "multi-doc", "flow", "key-number"]))
    if how == "list":
        return Mutation(b"- name: x\n- num_sms: 1\n", ["mapping"], True, how)
    if how == "scalar":
        return Mutation(b"just text\n", ["mapping"], True, how)
    if how == "complex-key":
        return Mutation((text + "? [a, b]\n: 1\n").encode(), ["key", "line", "[a, b]", "'a'"], True, how)
    if how == "deep":
        depth = draw(st.sampled_from([500, 3000, 20000]))
        return Mutation((text + "extra: " + "[" * depth + "]" * depth + "\n").encode(),
                        ["extra", "deep", "nest", "line"], True, f"{how} {depth}")
    if how == "laughs":
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for i in range(1, 9):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
        return Mutation((text + "\n".join(lines) + "\n").encode(), ["a0", "a1", "alias", "unknown"], True, how)
    if how == "alias-field":
        key = draw(st.sampled_from(numeric))
        mutated = set_key(text, key, "*nope")
        return Mutation(mutated.encode(), ["nope", "alias", "line"], True, how)
    if how == "anchor-merge":
        return Mutation((text + "base: &b {x: 1}\nderived:\n  <<: *b\n").encode(), ["base", "derived"], True, how)
    if how == "multi-doc":
        return Mutation((text + "---\nname: other\n").encode(), ["document", "line"], True, how)
    if how == "flow":
        return Mutation(("{" + ", ".join(f"{k}: 1" for k in keys[:3]) + "\n").encode(), ["line", "YAML"], True, how)
    return Mutation((text + "132: x\n").encode(), ["132", "unknown"], True, how)


def _load(kind: str, path: Path):
    clear_cache()
    return load_gpu(path) if kind == "gpu" else load_model(path)


def check_mutation(kind: str, m: Mutation) -> None:
    with scratch() as folder:
        path = folder / f"spec-{kind}.yaml"
        path.write_bytes(m.data)
        result = check_api(lambda: _load(kind, path), [*m.idents, path.name] if m.must_fail is not False else [],
                           expect_error=m.must_fail, what=f"load {kind} with {m.what[:80]}")
        if result is None:      # ROOFLAB_FUZZ_COLLECT recorded a failure
            return
        if isinstance(result, RooflabError):
            assert path.name in str(result) or str(path) in str(result), f"the error does not name the file: {result}"
            return
        assert finite_everywhere(result) is None, f"{m.what}: a non-finite value in {result}"
        if m.field in GPU_NUMERIC + MODEL_NUMERIC and m.value_text in MAYBE_NUMBERS:
            assert getattr(result, m.field) == pytest.approx(132), f"{m.what}: read as {getattr(result, m.field)!r}"


@fuzz_settings(150)
@given(mutations("gpu"))
def test_fuzz_gpu_yaml(m):
    check_mutation("gpu", m)


@fuzz_settings(150)
@given(mutations("model"))
def test_fuzz_model_yaml(m):
    check_mutation("model", m)


@fuzz_settings(25)
@given(st.sampled_from(["gpu", "model"]).flatmap(lambda k: st.tuples(st.just(k), mutations(k))))
def test_fuzz_spec_yaml_through_the_cli(pair):
    """The same mutations through `rooflab report --gpu FILE` / `--model FILE`: exit 0 or 2, the file named."""
    kind, m = pair
    with scratch() as folder:
        path = folder / f"spec-{kind}.yaml"
        path.write_bytes(m.data)
        option = "--gpu" if kind == "gpu" else "--model"
        fmt = ["-f", "json"]
        case = Case(["report", option, str(path), *fmt], [path.name] if m.must_fail is not False else [],
                    None if m.must_fail is None else (2 if m.must_fail else None), inputs=[path], json=True,
                    note=m.what[:100])
        clear_cache()
        check_cli(case, folder)


# --- explicit regressions for the YAML door --------------------------------------------------------------------

H100 = (HARDWARE / "h100-sxm.yaml").read_text()
LLAMA = (MODELS / "llama-3-8b.yaml").read_text()


@pytest.mark.parametrize("text, idents, must_fail", [
    (set_key(H100, "num_sms", "0132"), ["num_sms", "0132"], True),
    (set_key(H100, "num_sms", "2:12"), ["num_sms", "2:12"], True),
    (set_key(H100, "num_sms", "0x84"), ["num_sms", "0x84"], True),
    (set_key(H100, "num_sms", "1_32"), ["num_sms", "1_32"], True),
    (set_key(H100, "hbm_bandwidth_bytes_per_s", "1.0e-300"), ["hbm_bandwidth_bytes_per_s"], True),
    (set_key(H100, "hbm_bandwidth_bytes_per_s", "1e308"), ["hbm_bandwidth_bytes_per_s"], True),
    (set_key(H100, "hbm_bandwidth_bytes_per_s", ".nan"), ["hbm_bandwidth_bytes_per_s"], True),
    (set_key(H100, "hbm_bandwidth_bytes_per_s", ".inf"), ["hbm_bandwidth_bytes_per_s"], True),
    (set_key(H100, "hbm_bandwidth_bytes_per_s", "'3.35e12'"), ["hbm_bandwidth_bytes_per_s"], True),
    (set_key(H100, "num_sms", "[132]"), ["num_sms"], True),
    (set_key(H100, "num_sms", "132.5"), ["num_sms"], True),
    (set_key(H100, "num_sms", "true"), ["num_sms"], True),
    (set_key(H100, "num_sms", "yes"), ["num_sms", "yes"], True),
    (set_key(H100, "num_sms", "!!binary aGVsbG8="), ["num_sms"], True),
    (set_key(H100, "display_name", "!!binary aGVsbG8="), ["display_name"], True),
    (set_key(H100, "display_name", "!!set {a, b}"), ["display_name"], True),
    (set_key(H100, "display_name", "'$\\frac{a}{b}$'"), [], False),
    (drop_key(H100, "hbm_bandwidth_bytes_per_s"), ["hbm_bandwidth_bytes_per_s"], True),
    (duplicate_key(H100, "num_sms"), ["num_sms", "duplicate"], True),
    (H100 + "num_sm: 132\n", ["num_sm"], True),
    (H100 + "decode_units_per_sm: 1.5\n", [], False),
    (H100 + "decode_units_per_sm: 1.5\nunits_per_sm: 1.5\n", ["decode_units_per_sm", "units_per_sm"], True),
    (H100 + "? [a, b]\n: 1\n", ["key", "line"], True),
    (H100 + "extra: " + "[" * 5000 + "]" * 5000 + "\n", ["extra", "deep", "nest", "line"], True),
    (set_key(LLAMA, "num_kv_heads", "0"), ["num_kv_heads"], True),
    (set_key(LLAMA, "num_kv_heads", "5"), ["num_kv_heads"], True),
    (set_key(LLAMA, "num_layers", "1e400"), ["num_layers"], True),
    (set_key(LLAMA, "max_context_len", "9999999999999999999999"), ["max_context_len"], True),
    (set_key(LLAMA, "num_parameters", "1e16"), [], None),
    # the hostile round (issue 24): a published count its layers contradict priced Llama-3-8B's weights at 2 bytes
    (set_key(LLAMA, "num_parameters", "1"), ["num_parameters"], True),
    (set_key(LLAMA, "num_parameters", "80302612480"), ["num_parameters"], True),
    (set_key(LLAMA, "num_parameters", "8100000000"), [], False),
    (set_key(LLAMA, "name", "9" * 400), ["name"], None),
    (set_key(LLAMA, "display_name", "-" + "9" * 400), ["display_name"], None),
    (set_key(H100, "units_per_sm", "5e-324"), ["units_per_sm"], True),
], ids=lambda v: v if isinstance(v, (bool, type(None))) else None)
def test_yaml_regressions(text, idents, must_fail):
    kind = "gpu" if "hbm_capacity_bytes" in text else "model"
    check_mutation(kind, Mutation(text.encode(), idents, must_fail, "regression"))


def test_billion_laughs_is_refused_quickly():
    """Nine levels of ten aliases: 10^9 leaves if anything expands or prints them (repr in an error message)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    check_mutation("gpu", Mutation((H100 + "\n".join(lines) + "\n").encode(), ["a0", "a8", "unknown"], True, "laughs"))


def test_a_bundled_yaml_loaded_by_path_and_edited_is_read_again():
    """load_gpu caches by path: a file rewritten in the same session (a notebook editing its YAML, a
    calibration rewriting it) must not be answered from the cache with the old figures."""
    with scratch() as folder:
        path = folder / "gpu.yaml"
        path.write_text(H100)
        first = load_gpu(path)
        path.write_text(set_key(H100, "hbm_capacity_bytes", "90000000000"))   # above the CUDA-visible total, as it must be
        again = load_gpu(path)
        assert again.hbm_capacity_bytes == 90_000_000_000, "read the old capacity from a rewritten file (a stale cache)"
        path.write_text(set_key(H100, "num_sms", "0132"))
        check_api(lambda: load_gpu(path), ["num_sms"], expect_error=True)
        assert first.num_sms == 132


def test_loaded_specs_are_not_shared_mutable_state():
    """load_model returns one cached object: nothing a caller can reach on it may change what the next caller gets."""
    model = load_model("llama-3-8b")
    expected = model.kv_bytes_per_token(DType.fp16)
    for name in ("layer_counts",):
        value = getattr(model, name)
        if isinstance(value, dict):
            try:
                value[next(iter(value))] = 1
            except TypeError:
                pass
    clear_cache()
    fresh = load_model("llama-3-8b")
    assert fresh.kv_bytes_per_token(DType.fp16) == expected
    assert model.kv_bytes_per_token(DType.fp16) == expected, \
        "ModelSpec.layer_counts is a plain dict cached on a shared spec: writing to it changed the KV bytes per token"


# --- the Python API: constructors and replace -------------------------------------------------------------------

class Weird:
    def __repr__(self) -> str:
        return "<Weird>"


#: Python values no numeric field accepts.
BAD_PY_NUMBERS = [None, 0, -1, 1e-300, 1e308, math.inf, -math.inf, math.nan, True, False, "132", b"132", [132], (132,),
                  {}, Weird(), 2**64, 10**400, -(10**400), complex(132, 0), Decimal("NaN"), np.float64("nan"),
                  np.array([132.0]), np.inf, "", " ", "nan", 5e-324, -0.0]
#: Values a numeric field may take as the number they are, or refuse, but never with another exception.
ODD_PY_NUMBERS = [np.int64(132), np.float64(132.0), np.float32(132.0), Decimal("132"), Fraction(132), 132.0,
                  np.array(132.0), np.bool_(True), np.uint8(132)]
BAD_PY_TEXT = [None, "", " ", "\t\n", b"name", ["a"], {"a": 1}, Weird(), math.nan, math.inf, True, "x" * 20_001]
ODD_PY_TEXT = [123, 1.5, "\x00", "\u202e", "$\\frac{a}{b}$", "{}", "\U0001f4a5", np.str_("h100")]
BAD_PY_RATES = [{}, None, "fp16", [("fp16", 1e15)], {"fp16": math.nan}, {"fp16": "1e15"}, {"FP16": 989.4e12},
                {1: 1e15}, {None: 1e15}, {"fp16": 1e15, "fp99": 1e15}, {"fp16": -1.0}, {"fp16": 1e-300},
                {"fp16": True}, {"fp16": [1e15]}, {("fp16",): 1e15}, {"bf16": 989.4e12}]


def _gpu() -> GpuSpec:
    return load_gpu("h100-sxm")


def _model() -> ModelSpec:
    return load_model("llama-3-8b")


def _replace_case(spec, field: str, value, must_fail: Optional[bool]):
    def call():
        return dataclasses.replace(spec, **{field: value})

    result = check_api(call, [field], expect_error=must_fail,
                       what=f"replace({type(spec).__name__}, {field}={value!r:.60})")
    if result is not None and not isinstance(result, RooflabError):
        found = finite_everywhere(result)
        assert found is None, f"replace({field}={value!r:.40}) accepted a non-finite value at {found}"
        held = getattr(result, field)
        assert isinstance(held, str) or not isinstance(held, (np.ndarray, np.generic, Decimal, Fraction, complex)), \
            f"replace({field}={value!r:.40}) kept a {type(held).__name__}: specs hold plain numbers"


GPU_FIELDS = [f.name for f in dataclasses.fields(GpuSpec)]
MODEL_FIELDS = [f.name for f in dataclasses.fields(ModelSpec)]


@fuzz_settings(200)
@given(st.sampled_from(GPU_NUMERIC + ["units_per_sm"]), st.sampled_from(BAD_PY_NUMBERS))
@example("num_sms", 132.5)
@example("hbm_bandwidth_bytes_per_s", 1e-300)
@example("num_sms", 10**400)
def test_fuzz_gpu_replace_numbers(field, value):
    must = not (value is None and GPU_DOCS[field]["optional"])
    _replace_case(_gpu(), field, value, must)


@fuzz_settings(60)
@given(st.sampled_from(GPU_NUMERIC + MODEL_NUMERIC), st.sampled_from(ODD_PY_NUMBERS))
def test_fuzz_replace_odd_numbers(field, value):
    spec = _gpu() if field in GPU_FIELDS else _model()
    _replace_case(spec, field, value, None)


@fuzz_settings(120)
@given(st.sampled_from(MODEL_NUMERIC + ["num_experts", "num_experts_per_token", "v_head_dim", "first_dense_layers",
                                        "moe_layer_step", "dense_ffn_size", "num_shared_experts",
                                        "shared_expert_ffn_size"]),
       st.sampled_from(BAD_PY_NUMBERS))
def test_fuzz_model_replace_numbers(field, value):
    optional = MODEL_DOCS[field]["optional"]
    zero_ok = field in ("first_dense_layers", "num_shared_experts")
    must = True
    if value is None and optional:
        must = False
    if zero_ok and (value in (0, False) and not isinstance(value, bool) or value == -0.0):
        must = None
    _replace_case(_model(), field, value, must)


@fuzz_settings(80)
@given(st.sampled_from(["gpu", "model"]), st.sampled_from(TEXT_FIELDS + ["vendor", "architecture", "compute_capability",
                                                                         "parameters_note"]),
       st.sampled_from(BAD_PY_TEXT + ODD_PY_TEXT))
def test_fuzz_replace_text(kind, field, value):
    spec = _gpu() if kind == "gpu" else _model()
    if field not in (GPU_FIELDS if kind == "gpu" else MODEL_FIELDS):
        return
    optional = (GPU_DOCS if kind == "gpu" else MODEL_DOCS)[field]["optional"]
    must = None if value in ODD_PY_TEXT else (False if value is None and optional else True)
    if isinstance(value, str) and value.strip() and len(value) <= 10_000:
        must = None
    _replace_case(spec, field, value, must)


@fuzz_settings(40)
@given(st.sampled_from(BAD_PY_RATES))
def test_fuzz_gpu_rates(value):
    must = None if value == {"bf16": 989.4e12} else True
    _replace_case(_gpu(), "dense_tensor_flop_per_s", value, must if value != {"bf16": 989.4e12} else True)


@fuzz_settings(60)
@given(st.sampled_from(["layer_types", "layer_pattern", "first_layers", "quantization", "weight_dtype"]),
       st.sampled_from([None, {}, [], "full", ["full", 5], ("nope",), {"full": "full"}, {"full": None},
                        {"full": LayerType("sliding", window=4)}, {"": LayerType("full")}, {5: LayerType("full")},
                        {"linear": "fp4"}, {"mlp": "nvfp4"}, "fp99", 5, Weird(), ("full",) * 100_001]))
def test_fuzz_model_structure(field, value):
    _replace_case(_model(), field, value, None)


def _full_kwargs(cls, spec) -> dict:
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(cls)}


@fuzz_settings(60)
@given(st.sampled_from(GPU_NUMERIC), st.sampled_from(BAD_PY_NUMBERS))
def test_fuzz_gpu_constructor(field, value):
    """GpuSpec(...) itself, not only replace: the same door."""
    kwargs = _full_kwargs(GpuSpec, _gpu())
    kwargs[field] = value
    optional = GPU_DOCS[field]["optional"]
    if kwargs.get("tensor_flop_per_clock_per_sm") and field in ("num_sms", "max_sm_clock_hz"):
        optional = False                 # the per-clock rates need both: a physical roof is rate x SMs x max clock
    check_api(lambda: GpuSpec(**kwargs), [field], expect_error=not (value is None and optional),
              what=f"GpuSpec({field}={value!r:.60})")


@fuzz_settings(80)
@given(st.sampled_from(["num_qo_heads", "num_kv_heads", "head_dim", "v_head_dim"]),
       st.sampled_from(BAD_PY_NUMBERS + ODD_PY_NUMBERS))
def test_fuzz_attention_heads(field, value):
    args = {"num_qo_heads": 32, "num_kv_heads": 8, "head_dim": 128, "v_head_dim": None}
    args[field] = value
    must = None if any(value is v for v in ODD_PY_NUMBERS) else True
    if field == "v_head_dim" and value is None:
        must = False
    check_api(lambda: AttentionHeads(**args), [field], expect_error=must, what=f"AttentionHeads({field}={value!r:.60})")


@fuzz_settings(80)
@given(st.sampled_from(["kind", "window", "chunk", "kv_lora_rank", "linear_conv_kernel", "state_dtype", "sinks"]),
       st.sampled_from(BAD_PY_NUMBERS + ["nope", "FULL", "sliding ", DType.fp16, "fp99"]))
def test_fuzz_layer_type(field, value):
    args = {"kind": "sliding", "window": 1024}
    args[field] = value
    check_api(lambda: LayerType(**args), [field, "window", "sliding", "layer type"], expect_error=None,
              what=f"LayerType({args!r:.80})")


@fuzz_settings(60)
@given(st.sampled_from(["copy_bytes_per_s", "gemm_flop_per_s", "date", "device_name", "exp_per_s"]),
       st.sampled_from(BAD_PY_NUMBERS + BAD_PY_RATES[:6]))
def test_fuzz_measured_ceilings(field, value):
    base = load_gpu("h200-sxm").measured
    _replace_case(base, field, value, None)


# --- Ceilings.of ---------------------------------------------------------------------------------------------

@fuzz_settings(80)
@given(st.sampled_from(["h100-sxm", "h200-sxm", "a100-40gb", "mi300x", "l40s"]),
       st.sampled_from([*DType, "fp16", "FP16", " fp16", "fp8", "tf32", "", None, 16, Weird(), "bf16"]),
       st.sampled_from(["datasheet", "calibrated", "CALIBRATED", " calibrated", "measured", "", None, 1, Weird()]))
@example("h100-sxm", DType.fp16, "calibrated")
@example("a100-40gb", DType.fp16, "calibrated")
def test_fuzz_ceilings_of(gpu_name, dtype, source):
    from rooflab.floors import Ceilings
    from rooflab.vocab import CeilingSource

    gpu = load_gpu(gpu_name)
    result = check_api(lambda: Ceilings.of(gpu, dtype, source), ["dtype", "source", "ceiling", "measured", "calibrat",
                                                                 str(dtype), str(source), gpu_name],
                       what=f"Ceilings.of({gpu_name}, {dtype!r}, {source!r})")
    if result is None or isinstance(result, RooflabError):
        return
    assert finite_everywhere(result) is None
    if result.source is CeilingSource.calibrated:
        assert gpu.measured is not None, f"{gpu_name} has no measured: section, yet calibrated ceilings came back"
        assert result.bandwidth_bytes_per_s == gpu.measured.copy_bytes_per_s
    elif str(source).strip().lower() == "calibrated":
        raise AssertionError(f"asked for {source!r} ceilings, got {result.source}")


# --- cost functions and reports with bad workloads -------------------------------------------------------------

BAD_WORKLOAD = [0, -1, 1.5, math.nan, math.inf, -math.inf, True, "8192", None, 2**31 + 1, 2**63, 10**19, 10**400, [],
                [0], [1, -1], [1.5], np.array([]), np.array([[8192]]), np.array([np.nan]), b"8192", Weird(),
                complex(8192, 0), [8192] * (2**16 + 1), 1e18, 5e-324, -0.0]
ODD_WORKLOAD = [8192, 8192.0, np.int64(8192), np.float64(8192), [8192, 1024], np.array([8192, 1]), 1, 2**31,
                Decimal(8192), Fraction(8192)]


def _heads():
    return AttentionHeads(32, 8, 128)


def _api_calls():
    from rooflab.capacity import plan_capacity
    from rooflab.cost.flash import flash_prefill
    from rooflab.cost.merge import merge_pair
    from rooflab.cost.naive import naive_prefill
    from rooflab.cost.paged import DecodeBatch, paged_decode, recommend_splits
    from rooflab.numerics import softmax_headroom
    from rooflab.report import decode_report, prefill_report
    from rooflab.floors import Ceilings, floor

    gpu, model, heads = _gpu(), _model(), _heads()
    roofs = Ceilings.of(gpu, DType.fp16)
    return {
        "naive_prefill seq_len": (lambda v: floor(naive_prefill(heads, v), roofs), ["seq_len"]),
        "naive_prefill batch": (lambda v: floor(naive_prefill(heads, 8192, v), roofs), ["batch"]),
        "flash_prefill seq_len": (lambda v: floor(flash_prefill(heads, v, gpu=gpu), roofs), ["seq_len"]),
        "flash_prefill num_sms": (lambda v: floor(flash_prefill(heads, 8192, num_sms=v), roofs), ["num_sms", "SM"]),
        "flash_prefill units_per_sm": (lambda v: floor(flash_prefill(heads, 8192, num_sms=132, units_per_sm=v),
                                                         roofs), ["units_per_sm", "units"]),
        "paged_decode context_lens": (lambda v: floor(paged_decode(heads, v), roofs), ["context", "length"]),
        "paged_decode page_size": (lambda v: floor(paged_decode(heads, [8192], v), roofs), ["page_size", "page"]),
        "paged_decode num_splits": (lambda v: floor(paged_decode(heads, [8192], 16, num_splits=v), roofs),
                                    ["split"]),
        "paged_decode num_sms": (lambda v: floor(paged_decode(heads, [8192], 16, num_splits=4, num_sms=v), roofs),
                                 ["num_sms", "SM"]),
        "paged_decode q_len": (lambda v: floor(paged_decode(heads, [8192], 16, q_len=v), roofs), ["q_len"]),
        "recommend_splits num_sms": (lambda v: recommend_splits(heads, [8192], v), ["num_sms", "SM"]),
        "recommend_splits context_lens": (lambda v: recommend_splits(heads, v, 132), ["context", "length"]),
        "DecodeBatch.uniform length": (lambda v: DecodeBatch.uniform(v, 4), ["context", "length"]),
        "DecodeBatch.uniform batch": (lambda v: DecodeBatch.uniform(8192, v), ["batch"]),
        "merge_pair tokens": (lambda v: floor(merge_pair(v, 32, 128), roofs), ["tokens"]),
        "merge_pair num_heads": (lambda v: floor(merge_pair(8192, v, 128), roofs), ["num_heads", "heads"]),
        "merge_pair head_dim": (lambda v: floor(merge_pair(8192, 32, v), roofs), ["head_dim"]),
        "plan_capacity context_len": (lambda v: plan_capacity(model, gpu, v), ["context"]),
        "plan_capacity utilization": (lambda v: plan_capacity(model, gpu, 8192, gpu_memory_utilization=v),
                                      ["utilization", "utilisation"]),
        "plan_capacity reserve": (lambda v: plan_capacity(model, gpu, 8192, activation_reserve_bytes=v),
                                  ["reserve", "activation"]),
        "plan_capacity page_size": (lambda v: plan_capacity(model, gpu, 8192, page_size=v), ["page"]),
        "plan_capacity tensor_parallel": (lambda v: plan_capacity(model, gpu, 8192, tensor_parallel=v),
                                          ["tensor", "parallel"]),
        "plan_capacity shared_prefix_len": (lambda v: plan_capacity(model, gpu, 8192, shared_prefix_len=v),
                                            ["prefix"]),
        "plan_capacity max_model_len": (lambda v: plan_capacity(model, gpu, 8192, max_model_len=v),
                                        ["max_model_len", "max"]),
        "softmax_headroom seq_len": (lambda v: softmax_headroom(DType.fp16, v), ["seq_len"]),
        "softmax_headroom logit_std": (lambda v: softmax_headroom(DType.fp16, 8192, v), ["logit_std"]),
        "prefill_report seq_len": (lambda v: prefill_report(model, gpu, v), ["seq_len"]),
        "prefill_report batch": (lambda v: prefill_report(model, gpu, 8192, v), ["batch"]),
        "decode_report context_lens": (lambda v: decode_report(model, gpu, v), ["context", "length"]),
        "decode_report splits": (lambda v: decode_report(model, gpu, [8192], splits=v), ["split"]),
        "decode_report page_size": (lambda v: decode_report(model, gpu, [8192], v), ["page"]),
    }


CALLS = sorted(_api_calls())
#: Workloads the call may accept (valid for it) as well as refuse.
ACCEPTS = {"plan_capacity shared_prefix_len": [0, -0.0, False], "paged_decode num_sms": [None],
           "flash_prefill num_sms": [None], "decode_report splits": [None], "plan_capacity max_model_len": [None],
           "plan_capacity reserve": [0, -0.0, 2**31 + 1, 1e18], "flash_prefill units_per_sm": [1.5],
           "softmax_headroom logit_std": [1.5, 2**31 + 1, 1e18, 10**19, 2**63]}
#: Array workloads (lengths, batches, tokens) are float64 arrays inside; a fraction is allowed there (sweeps).
for _name in ("naive_prefill seq_len", "naive_prefill batch", "flash_prefill seq_len", "merge_pair tokens",
              "paged_decode context_lens"):
    ACCEPTS[_name] = [1.5, [1.5], "8192", b"8192", *[v for v in BAD_WORKLOAD if isinstance(v, (list, np.ndarray))
                                                       and len(v) > 1 or isinstance(v, np.ndarray) and v.ndim == 2]]
ACCEPTS["recommend_splits context_lens"] = ACCEPTS["paged_decode context_lens"]


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is b
    return a is b or (type(a) is type(b) and a == b)


@fuzz_settings(300)
@given(st.sampled_from(CALLS), st.sampled_from(BAD_WORKLOAD + ODD_WORKLOAD))
@example("merge_pair head_dim", -1)
@example("merge_pair num_heads", 0)
@example("DecodeBatch.uniform batch", 10**19)
def test_fuzz_cost_functions(name, value):
    call, idents = _api_calls()[name]
    odd = any(value is v for v in ODD_WORKLOAD) or any(_same(value, v) for v in ACCEPTS.get(name, []))
    result = check_api(lambda: call(value), idents, expect_error=None if odd else True, what=f"{name} = {value!r:.60}")
    if odd and result is not None and not isinstance(result, RooflabError):
        found = finite_everywhere(result)
        assert found is None, f"{name}({value!r:.40}): a non-finite figure at {found}"


@pytest.mark.parametrize("dtype", [d for d in DType])
def test_softmax_headroom_every_dtype_at_the_shortest_row(dtype):
    """numerics at seq_len 2 in every dtype: the headroom of two logits (a math domain error once for fp64)."""
    from rooflab.numerics import softmax_headroom

    result = check_api(lambda: softmax_headroom(dtype, 2), ["tf32", "dtype"], expect_error=None)
    if not isinstance(result, RooflabError):
        assert finite_everywhere(result) is None


@pytest.mark.parametrize("dtype", ["fp16", "bf16", None, 2, "FP16"])
def test_cost_functions_take_a_dtype_by_name_or_refuse_it(dtype):
    """Ceilings.of coerces 'fp16'; a cost function given the same string must coerce it too or say what is wrong."""
    from rooflab.cost.merge import merge_pair
    from rooflab.cost.naive import naive_prefill
    from rooflab.cost.paged import paged_decode

    for call in (lambda: naive_prefill(_heads(), 1024, 1, dtype), lambda: paged_decode(_heads(), [1024], 16, dtype),
                 lambda: merge_pair(1024, 32, 128, dtype)):
        check_api(call, ["dtype", str(dtype)], expect_error=None, what=f"dtype={dtype!r}")
