"""rooflab/roofline.py, the deprecated alias of rooflab/floors.py: the old names are floors.py's objects."""

from __future__ import annotations

from rooflab import floors, roofline


def test_the_old_names_are_the_floors_names():
    assert roofline.predict is floors.floor
    assert roofline.predict_kernel is floors.floor_kernel
    assert roofline.Prediction is floors.Floors
    assert roofline.Ceilings is floors.Ceilings


def test_the_alias_re_exports_every_public_name_of_floors():
    assert set(floors.__all__) <= set(roofline.__all__)
    assert all(getattr(roofline, n) is getattr(floors, n) for n in floors.__all__)
