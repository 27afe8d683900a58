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
