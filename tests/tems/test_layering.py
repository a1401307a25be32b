"""The direction of imports: ``tems`` is the floor the apps stand on, and the lab is the one room that may look up.

Read from the source with ``ast``, so a lazy import inside a function counts as much as one at the top.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("registrations", "inventory")


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def top_level(modules: set[str]) -> set[str]:
    return {module.split(".")[0] for module in modules}


def tems_core_modules() -> list[Path]:
    allowed = (ROOT / "tems" / "lab", ROOT / "tems" / "management" / "commands")
    return [path for path in sorted((ROOT / "tems").rglob("*.py"))
            if path != ROOT / "tems" / "urls.py" and not any(path.is_relative_to(room) for room in allowed)]


def test_tems_core_imports_no_app():
    offenders = {str(path.relative_to(ROOT)): sorted(top_level(imported_modules(path)) & set(APPS))
                 for path in tems_core_modules()}
    assert {path: apps for path, apps in offenders.items() if apps} == {}


def test_management_commands_discover_the_apps_rather_than_name_them():
    commands = sorted((ROOT / "tems" / "management" / "commands").glob("*.py"))
    offenders = {str(path.relative_to(ROOT)): sorted(top_level(imported_modules(path)) & set(APPS))
                 for path in commands}
    assert {path: apps for path, apps in offenders.items() if apps} == {}


@pytest.mark.parametrize("app", APPS)
def test_no_app_reaches_the_lab_or_its_broken_techniques(app):
    offenders = [str(path.relative_to(ROOT)) for path in sorted((ROOT / app).rglob("*.py"))
                 if any(module == "tems.lab" or module.startswith("tems.lab.") for module in imported_modules(path))]
    assert offenders == []
    assert not list((ROOT / app).rglob("techniques.py")), "the broken techniques live in tems/lab/techniques/"
