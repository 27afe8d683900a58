"""`rooflab calibrate --collectives` from measurement files (rooflab.measure.calibrate_comm): the GPU YAML it writes
loads again and each collective's fit names the file its rows came from."""

from __future__ import annotations

from rooflab.load import data_dir, load_gpu


def test_calibrating_from_several_files_names_each_fits_file(tmp_path):
    """Two campaigns (2 and 4 GPUs) into one YAML: it loads again (the campaign names were once written unquoted,
    and 'a.csv, b.csv' in a flow mapping made a key of the second), and each fit names the file its rows came from."""
    from rooflab.measure.calibrate_comm import calibrate_collectives

    files = [data_dir("measurements") / f"h200x{n}-collectives.csv" for n in (2, 4)]
    out = tmp_path / "h200.yaml"
    link, target = calibrate_collectives("h200-sxm", out, 2, files, "rooflab calibrate --collectives (test)")
    assert target == out
    again = load_gpu(out).interconnect
    assert [c.key for c in again.collectives] == [c.key for c in link.collectives]
    assert {c.world_size for c in again.collectives} == {2, 4}
    for c in again.collectives:
        assert c.campaign == f"h200x{c.world_size}-collectives.csv"


def test_never_writes_over_its_inputs(tmp_path, monkeypatch):
    """D29 (hostile closing5): the target is refused where it is the measurement CSV read (by name, through a hard
    link) or the GPU YAML read (-o onto it, or no -o with ./g.yaml, whose default target is ./g.yaml itself):
    exit 2 naming --output, every input unchanged. A target beside them is written."""
    import os
    import shutil

    from typer.testing import CliRunner

    from rooflab.cli import app

    shutil.copy(data_dir("measurements") / "h200x2-collectives.csv", tmp_path / "coll.csv")
    shutil.copy(data_dir("hardware") / "h200-sxm.yaml", tmp_path / "g.yaml")
    os.link(tmp_path / "coll.csv", tmp_path / "hard.csv")
    monkeypatch.chdir(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    runner = CliRunner()
    base = ["calibrate", "--collectives", "--from", "coll.csv", "-g", "./g.yaml"]
    for extra in (["-o", "coll.csv"], ["-o", "hard.csv"], ["-o", "./sub/../g.yaml"], ["-o", "g.yaml"], []):
        result = runner.invoke(app, base + extra)
        assert result.exit_code == 2, (extra, result.output)
        assert "--output" in result.stderr and "overwrite an input" in result.stderr, (extra, result.stderr)
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    result = runner.invoke(app, base + ["-o", "out.yaml"])
    assert result.exit_code == 0, result.output
    assert load_gpu(tmp_path / "out.yaml").interconnect.collectives
