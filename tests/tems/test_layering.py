"""The direction of imports: ``tems`` is the floor the apps stand on, the lab an app that looks at the others, and
the test tooling lives with the tests.

Read from the source with ``ast``, so a lazy import inside a function counts as much as one at the top.
"""

import ast
import itertools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("registrations", "inventory", "lab")
PACKAGES = ("tems", *APPS)
# Modules Django (or Python) loads by convention, not by an import: the entry points of the app.
ENTRY_POINTS = {"__init__", "settings", "urls", "wsgi", "asgi", "apps", "admin", "models"}
ENTRY_FOLDERS = ("migrations", "commands", "templatetags")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports; ``from a import b`` names both ``a`` and ``a.b`` (b may be a module)."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def sources(*packages: str) -> list[Path]:
    return [path for package in packages for path in sorted((ROOT / package).rglob("*.py"))]


def imports_of(path: Path, packages: tuple[str, ...]) -> list[str]:
    return sorted(module for module in imported_modules(path)
                  if any(module == package or module.startswith(f"{package}.") for package in packages))


def test_tems_imports_no_app_and_not_the_lab():
    # The URLs and settings name the apps as strings (include("registrations.urls"), INSTALLED_APPS), and
    # tems discovers what the apps offer (<app>/invariants.py, <app>/demo.py): none of that is an import.
    offenders = {str(path.relative_to(ROOT)): imports_of(path, APPS) for path in sources("tems")}
    assert {path: modules for path, modules in offenders.items() if modules} == {}


@pytest.mark.parametrize("app", ["registrations", "inventory"])
def test_no_app_reaches_the_lab_or_its_broken_techniques(app):
    offenders = {str(path.relative_to(ROOT)): imports_of(path, ("lab",)) for path in sources(app)}
    assert {path: modules for path, modules in offenders.items() if modules} == {}
    assert not list((ROOT / app).rglob("techniques*")), "the broken techniques live in lab/techniques/"


def test_the_read_layer_stands_below_the_door():
    for module in ("registrations/selectors.py", "registrations/serializers.py", "registrations/ticket_tokens.py",
                   "registrations/models.py"):
        assert imports_of(ROOT / module, ("registrations.checkins",)) == [], module


@pytest.mark.parametrize(("app", "shaper"), [("registrations", "serializers"), ("inventory", "item_answers")])
def test_answers_are_shaped_by_the_serializers_alone(app, shaper):
    """Reads and writes hand items to the app's one answer-shaping module for an answer's body; it reads and
    writes nothing."""
    shapers = {str(path.relative_to(ROOT)) for path in sources(app)
               if any(isinstance(node, ast.FunctionDef) and node.name.endswith("_to_dict")
                      for node in ast.walk(ast.parse(path.read_text())))}
    assert shapers == {f"{app}/{shaper}.py"}
    assert imports_of(ROOT / app / f"{shaper}.py", (f"{app}.selectors", f"{app}.services")) == []


def import_graph(*packages: str) -> dict[str, set[str]]:
    modules = {module_name(path): path for path in sources(*packages)}
    return {name: (imported_modules(path) & modules.keys()) - {name} for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    order, low, stack, on_stack, found, counter = {}, {}, [], set(), [], itertools.count()

    def visit(module: str) -> None:
        order[module] = low[module] = next(counter)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in order:
            visit(module)
    return found


def test_no_import_circle():
    # A lazy import breaks the circle at start-up, not in the design: it counts too.
    assert circles(import_graph(*PACKAGES)) == []


def test_the_circle_finder_finds_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_test_only_module_under_tems():
    """Every module of tems serves the running app: an entry point Django loads, a dotted path in the settings, or
    a module that the app's own code imports. Test tooling lives in tests/support/."""
    settings = ast.parse((ROOT / "tems" / "settings.py").read_text())
    settings_paths = {node.value for node in ast.walk(settings) if isinstance(node, ast.Constant)
                      and isinstance(node.value, str) and node.value.startswith("tems.")}
    used = set()
    for path in [*sources(*PACKAGES), ROOT / "manage.py"]:
        used |= imported_modules(path) - {module_name(path)}
    for dotted in settings_paths:
        parts = dotted.split(".")
        used.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
    unused = [module_name(path) for path in sources("tems")
              if path.stem not in ENTRY_POINTS and path.parent.name not in ENTRY_FOLDERS
              and module_name(path) not in used]
    assert unused == []


# The data has one shape: nothing converts older ones, and no request path branches on one (docs/ARCHITECTURE.md,
# "Changing the data's shape"). These words name such code; the tests may say them, the app may not.
FENCE_WORDS = re.compile(r"legacy|older shape|upgrade_if|LEGACY_LAYOUT|CURRENT_LAYOUT", re.IGNORECASE)
# Not the project's source: installed packages, tools' caches and build output.
NOT_SOURCE = {".venv", "node_modules", ".git", ".ruff_cache", "__pycache__", "tests"}


def fence_words(root: Path) -> list[str]:
    """Every ``path:line`` under ``root`` (outside the tests and what is not the project's source) whose Python
    source names an older data shape."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if NOT_SOURCE & set(relative.parts[:-1]) or any(part.endswith(".egg-info") for part in relative.parts):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if FENCE_WORDS.search(line):
                found.append(f"{relative}:{number}")
    return found


def test_no_code_knows_an_older_data_shape():
    assert fence_words(ROOT) == []


def test_the_fence_word_finder_finds_one(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "services.py").write_text("x = 1\nif layout == LEGACY_LAYOUT:\n    upgrade()\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_it.py").write_text("# an upgrade_if_old_shape test may name it\n")
    assert fence_words(tmp_path) == ["app/services.py:2"]


# Names a module may share with another: the layer it is (``events/services.py`` beside ``offers/services.py``).
LAYER_NAMES = {"__init__", "api", "views", "services", "selectors", "models", "urls", "forms", "serializers", "admin",
               "apps", "errors", "demo", "invariants", "notifications", "edits"}


def shared_names(root: Path, packages: tuple[str, ...]) -> list[str]:
    """Module names used by more than one module of ``packages`` that are not a layer's name."""
    seen: dict[str, list[str]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            seen.setdefault(path.stem, []).append(str(path.relative_to(root)))
    return sorted(f"{name}: {', '.join(paths)}" for name, paths in seen.items()
                  if len(paths) > 1 and name not in LAYER_NAMES and "migrations" not in paths[0])


def test_no_two_modules_share_a_name_unless_it_is_a_layer():
    # A newcomer guesses the file from the noun: services/cancel.py beside services/cancellation.py, or two
    # common.py, told them nothing.
    assert shared_names(ROOT, PACKAGES) == []


def test_the_shared_name_finder_finds_one(tmp_path):
    for path in ("app/services/common.py", "app/offers/services.py", "app/events/services.py", "lab/common.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert shared_names(tmp_path, ("app", "lab")) == ["common: app/services/common.py, lab/common.py"]
