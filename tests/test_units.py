"""Tests of rooflab/units.py.

From the suites this file gathers:

Bad input at the Python API's doors: specs, the YAML schema, counts and sizes, writes, bounded work.

The CLI's share is in the fuzz suite (tests/test_fuzz_*.py); these pin each door's behaviour once.

Bundled specs load, and every kind of bad spec is an error naming the file, the field and the value.
"""

from __future__ import annotations

import pytest

from rooflab import DType
from rooflab.units import parse_bytes, parse_count


# --- counts and sizes as people write them -----------------------------------------------------------------

@pytest.mark.parametrize("text, value", [("8192", 8192), ("8_192", 8192), ("32k", 32_000), ("32K", 32_768),
                                         ("32Ki", 32_768), ("1M", 1 << 20), ("1m", 10**6), ("25.6k", 25_600)])
def test_counts(text, value):
    assert parse_count(text) == value       # vLLM's convention: lowercase decimal, uppercase binary


@pytest.mark.parametrize("text", ["abc", "1e9", "1.5K", "", "12.3"])
def test_bad_counts(text):
    with pytest.raises(ValueError):
        parse_count(text)


def test_sizes():
    assert parse_bytes("80GiB") == 80 * 2**30 and parse_bytes("192GB") == 192 * 10**9
    with pytest.raises(ValueError):
        parse_bytes("lots")


def test_every_dtype_has_a_stored_weight_format():
    """tf32 is a tensor-core mode over fp32 storage; fp64 weights take 8 bytes (plot decode --dtype tf32 crashed)."""
    from rooflab.units import DType, WeightFormat

    stored = {d: WeightFormat.of(d) for d in DType}
    assert stored[DType.tf32] is WeightFormat.fp32 and stored[DType.fp64].bits_per_weight == 64
    assert all(stored[d].bits_per_weight == d.bits for d in DType if d is not DType.tf32)


@pytest.mark.parametrize("value", ["nope", 5, None, DType])
def test_weight_format_of_names_what_it_was_given_as(value):
    """WeightFormat.of('nope') raised the enum's ValueError from deep in capacity and decode_step."""
    from rooflab.errors import InputError
    from rooflab.units import WeightFormat

    with pytest.raises(InputError, match="weight_dtype"):
        WeightFormat.of(value)


def test_weight_format_of_takes_formats_and_dtypes_by_name():
    from rooflab.units import WeightFormat

    assert WeightFormat.of("mxfp4") is WeightFormat.mxfp4 and WeightFormat.of("fp8_e5m2") is WeightFormat.fp8
    assert WeightFormat.of(DType.tf32) is WeightFormat.fp32


@pytest.mark.parametrize("text", ["0.5B", "0.5", "1.5", "0.0001KB", "0.4B"])
def test_a_size_that_is_not_a_whole_number_of_bytes_is_refused(text):
    """'0.5B' was rounded to 0 bytes; a fraction of a byte, or a size that rounds to none, is refused."""
    with pytest.raises(ValueError, match="whole number of bytes"):
        parse_bytes(text)


@pytest.mark.parametrize("text, value", [("1.5KB", 1500), ("0.5KiB", 512), ("2.5GB", 2_500_000_000), ("7B", 7)])
def test_a_fraction_of_a_unit_that_makes_whole_bytes_is_kept(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text, value", [("23.55GiB", round(23.55 * 2**30)), ("1.0000001KiB", 1024),
                                         ("79.22GiB", round(79.22 * 2**30))])
def test_a_rounded_size_as_engines_print_it_is_the_nearest_byte(text, value):
    """vLLM and SGLang print sizes to two decimals ('Available KV cache memory: 23.55 GiB'): the nearest byte."""
    assert parse_bytes(text) == value
