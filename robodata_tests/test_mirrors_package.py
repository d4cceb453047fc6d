"""The suite mirrors the package: every folder of ``robodata/`` has a folder of tests with the
same name here, so a newcomer finds a module's tests where the module is."""

from __future__ import annotations

from pathlib import Path

SUITE = Path(__file__).resolve().parent
PACKAGE = SUITE.parent / "robodata"
# package folder -> the test file that covers it from another folder, and why it lives there
ELSEWHERE: dict[str, str] = {}


def package_folders() -> list[str]:
    return sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))


def test_every_package_folder_has_its_tests_folder():
    missing = []
    for name in package_folders():
        if name in ELSEWHERE:
            if not (SUITE / ELSEWHERE[name]).is_file():
                missing.append(f"{name}: {ELSEWHERE[name]} is gone")
        elif not list((SUITE / name).glob("test_*.py")):
            missing.append(f"robodata/{name}/ has no tests in robodata_tests/{name}/")
    assert not missing, "\n".join(missing)


def test_the_package_folders_are_found():
    # the check above is only as good as the listing it walks
    assert {"codec", "format", "reader", "storage", "torch", "orchestration"} <= set(package_folders())
