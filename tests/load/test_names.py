"""What a name means (rooflab/load/names.py): a missing file, an unknown name with the closest suggested and cut
short, nvidia-smi's name of each part, and a PCIe name that never resolves to an SXM part."""

from __future__ import annotations

import pytest

from rooflab.errors import SpecError, UnknownNameError
from rooflab.load import data_dir, load_gpu, load_model, resolve_gpu_name


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_gpu(str(tmp_path / "nope.yaml"))


def test_unknown_name_suggests_closest():
    assert load_gpu("h100 sxm").name == "h100-sxm"          # the one GPU whose names start with it, word by word
    with pytest.raises(UnknownNameError) as info:
        load_gpu("h100-sx")                                  # stops inside a word: not a name, but a suggestion
    assert info.value.suggestion == "h100-sxm"
    with pytest.raises(UnknownNameError) as info:
        load_gpu("h100-sxn")
    msg = str(info.value)
    assert "Did you mean 'h100-sxm'" in msg and "a100-40gb" in msg and "mi300x" in msg
    with pytest.raises(UnknownNameError) as info:
        load_model("lama-3-8b")
    assert info.value.suggestion == "llama-3-8b"


def test_an_unknown_name_is_not_printed_whole():
    with pytest.raises(UnknownNameError) as info:
        load_gpu("a" * 100_000)
    assert len(str(info.value)) < 600 and "GPU 'aaa" in str(info.value)


@pytest.mark.parametrize("smi, name", [
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"), ("NVIDIA A100-PCIE-80GB", "a100-pcie-80gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"), ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA H800", "h800"), ("NVIDIA H200", "h200-sxm"), ("NVIDIA L4", "l4"), ("NVIDIA A10", "a10"),
    ("Tesla T4", "t4"), ("NVIDIA L40", "l40"), ("NVIDIA L40S", "l40s"), ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("AMD Instinct MI300X", "mi300x"), ("AMD Instinct MI325X", "mi325x"),
    ("AMD Instinct MI355X", "mi355x"), ("NVIDIA B200", "b200"), ("NVIDIA H20", "h20"), ("NVIDIA B300 SXM6 AC", "b300"), ("NVIDIA A10G", "a10g"), ("NVIDIA H20-3e", "h20-3e")])
def test_nvidia_smi_names_resolve_exactly(smi, name):
    assert resolve_gpu_name(smi) == name


@pytest.mark.parametrize("text", ["A100 PCIe", "A100 80GB PCIe", "NVIDIA A100 80GB PCIe", "H100 PCIe", "h100-pcie"])
def test_a_pcie_name_never_resolves_to_an_sxm_part(text):
    try:
        name = resolve_gpu_name(text)
    except UnknownNameError as err:                      # ambiguous between PCIe parts is fine; SXM ones never listed
        assert "sxm" not in str(err).split("Available")[0].lower()
        return
    assert "sxm" not in name and "sxm" not in load_gpu(name).display_name.lower()


def test_every_alias_agrees_with_its_gpus_board_form():
    """An alias naming PCIe on an SXM spec (the old 'NVIDIA A100 80GB PCIe' on a100-sxm-80gb) fails the name table."""
    from rooflab.load.names import _gpu_names

    names = _gpu_names()
    assert all(gpu.takes(gpu.forms) for gpu in names.values())
    assert names["a100-sxm-80gb"].forms == {"sxm"} and not names["a100-sxm-80gb"].takes(frozenset({"pcie"}))


def test_an_alias_contradicting_its_board_form_is_a_spec_error(tmp_path, monkeypatch):
    import shutil

    from rooflab.load import bundled
    from rooflab.load import names as load_module

    folder = tmp_path / "hardware"
    folder.mkdir()
    text = (data_dir("hardware") / "a100-sxm-80gb.yaml").read_text()
    (folder / "a100-sxm-80gb.yaml").write_text(text.replace('"NVIDIA A100-SXM4-80GB"]', '"NVIDIA A100 80GB PCIe"]'))
    shutil.copy(data_dir("hardware") / "h100-sxm.yaml", folder / "h100-sxm.yaml")
    monkeypatch.setattr(bundled, "data_dir", lambda kind: tmp_path / kind)
    load_module._gpu_names.cache_clear()
    try:
        with pytest.raises(SpecError, match="aliases.*pcie part; this GPU is sxm"):
            load_module._gpu_names()
    finally:
        monkeypatch.undo()
        load_module._gpu_names.cache_clear()
