"""The test tree mirrors the package: a module's tests are found by its name (tests/README.md).

tests/<pkg>/test_<name>.py tests rooflab/<pkg>/<name>.py, tests/<pkg>/test_init.py its __init__.py, and a
`_gpu` suffix (test_<name>_gpu.py) holds that module's GPU tests. The suites that deliberately span modules are
listed below by name; any other test file must name a module that exists, so renaming a module without its
tests fails here.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "rooflab"

#: Suites that are not about one module (tests/README.md says why each one spans the package).
CROSS_CUTTING = {"test_fuzz_cli.py", "test_fuzz_measurements.py", "test_fuzz_specs.py", "test_readme.py",
                 "test_notebooks.py", "test_imports.py", "test_layout.py", "test_one_path.py", "test_api_checks.py",
                 "test_fuzz_hostile.py", "test_fuzz_hostile_session16.py",
                 "test_fuzz_hostile_session16b.py", "test_fuzz_hostile_session16c.py"}


def module_of(test_file: Path) -> Path:
    """The package file a test file is named for: tests/cost/test_naive.py -> rooflab/cost/naive.py."""
    rel = test_file.relative_to(TESTS)
    stem = rel.stem.removeprefix("test_").removesuffix("_gpu")
    folder = PACKAGE.joinpath(*rel.parts[:-1])
    return folder / "__init__.py" if stem == "init" else folder / f"{stem}.py"


def test_every_test_file_names_a_module_of_the_package():
    orphans = [f"{f.relative_to(TESTS)} (no {module_of(f).relative_to(PACKAGE.parent)})"
               for f in sorted(TESTS.rglob("test_*.py"))
               if "data" not in f.relative_to(TESTS).parts
               and not (f.parent == TESTS and f.name in CROSS_CUTTING)
               and not module_of(f).is_file()]
    assert not orphans, "test files that name no module of rooflab/ (rename them with the module): " + ", ".join(orphans)


def test_every_test_folder_is_a_package_named_for_a_subpackage():
    folders = sorted({f.parent for f in TESTS.rglob("test_*.py")} - {TESTS})
    missing_init = [str(d.relative_to(TESTS)) for d in folders if not (d / "__init__.py").is_file()]
    no_subpackage = [str(d.relative_to(TESTS)) for d in folders
                     if not (PACKAGE / d.relative_to(TESTS) / "__init__.py").is_file()]
    assert not missing_init, f"test folders without __init__.py (basenames would clash): {missing_init}"
    assert not no_subpackage, f"test folders that name no subpackage of rooflab/: {no_subpackage}"
