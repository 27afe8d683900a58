"""Tests of rooflab/units.py: counts and sizes as people write them (32k = 32,000, 32K = 32,768; 80GiB, 192GB), a
fraction of a byte refused and engines' rounded sizes read to the nearest byte."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("text", ["0.5B", "0.0001KB", "0.4B"])
def test_a_size_that_is_not_a_whole_number_of_bytes_is_refused(text):
    """'0.5B' was rounded to 0 bytes; a fraction of a byte, or a size that rounds to none, is refused."""
    with pytest.raises(ValueError, match="whole number of bytes"):
        parse_bytes(text)


@pytest.mark.parametrize("text", ["80", "10", "0.5", "1.5", "4096"])
def test_a_size_needs_a_unit(text):
    """Issue 24 round 2 D17: '--cuda-visible-memory 80' was 80 bytes (a CUDA-visible total of 0.000 GiB)."""
    with pytest.raises(ValueError, match=f"'{text}' has no unit: write {text}GiB, {text}GB"):
        parse_bytes(text)


@pytest.mark.parametrize("text", ["80G", "80g", "512M", "1T", "4k"])
def test_a_one_letter_unit_is_refused_for_reading_two_ways(text):
    """vLLM's human_readable_int reads 80G as 80 GiB, SGLang's as 80 GB (units.parse_bytes's docstring)."""
    with pytest.raises(ValueError, match="reads two ways"):
        parse_bytes(text)


@pytest.mark.parametrize("text, value", [("0", 0), ("80Gi", 80 * 2**30), ("512 mi", 512 * 2**20), ("80gb", 80 * 10**9)])
def test_sglang_iec_spellings_and_zero(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text, value", [("1.5KB", 1500), ("0.5KiB", 512), ("2.5GB", 2_500_000_000), ("7B", 7)])
def test_a_fraction_of_a_unit_that_makes_whole_bytes_is_kept(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text, value", [("23.55GiB", round(23.55 * 2**30)), ("1.0000001KiB", 1024),
                                         ("79.22GiB", round(79.22 * 2**30))])
def test_a_rounded_size_as_engines_print_it_is_the_nearest_byte(text, value):
    """vLLM and SGLang print sizes to two decimals ('Available KV cache memory: 23.55 GiB'): the nearest byte."""
    assert parse_bytes(text) == value


def test_the_dtype_names_are_dtypes_names():
    """DType and the dtype facts moved to dtypes.py; rooflab.units re-exports them (the same objects)."""
    from rooflab import dtypes, units

    for name in ("DType", "WeightFormat", "FloatFormat", "loaded_dtype", "DTYPE_ALIASES", "RATE_KEYS",
                 "ACCUMULATE_MODES", "FP32_BYTES", "INT32_BYTES"):
        assert getattr(units, name) is getattr(dtypes, name)
