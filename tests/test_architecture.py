"""The layer order of docs/architecture.md, read from the code: no module imports one on a higher
floor (entry points, ``__main__`` modules and the top-level apps, are the top floor) and no imports
form a cycle. Every import counts, those inside functions too."""

import ast
from pathlib import Path

from terminal_rl.config import PROJECT_ROOT
from tests.config_trip import composed_names, read_modules, trip

PACKAGE = PROJECT_ROOT / "terminal_rl"
# Bottom to top; a module may import its own floor and those below (docs/architecture.md).
FLOORS = (
    ("config", "run_context", "analysis", "plot", "console"),
    ("tasks",),
    ("sandbox",),
    ("agent",),
    ("rewards", "judge", "models"),
    ("curriculum", "filtering", "generation", "datasets"),
    ("training",),
    ("integrations",),
    ("launch",),
    ("train", "preflight", "evaluate", "filter", "generate", "sft", "dpo", "export"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Module -> the terminal_rl modules it imports."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[module_name(path)] = {name for name in names if name.startswith("terminal_rl.")}
    return found


def floor(module: str) -> int:
    if module.endswith(".__main__"):
        return len(FLOORS) - 1
    unit = module.split(".")[1]
    return next(index for index, units in enumerate(FLOORS) if unit in units)


def test_every_package_has_its_floor():
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    assert units - {"__init__", "__pycache__"} == {unit for units in FLOORS for unit in units}


def test_no_import_runs_up_the_layers():
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in imports().items()
        for target in targets
        if module != "terminal_rl" and target.count(".") and floor(target) > floor(module)
    )
    assert upward == []


def test_no_imports_form_a_cycle():
    graph = imports()
    known = set(graph)
    edges = {module: {t for t in targets if t in known and t != module} for module, targets in graph.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module):  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in edges[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    assert cycles == []


def test_no_function_below_the_apps_takes_the_root_config():
    """From every function of an app that holds the composed config (a ``cfg`` parameter, or one it
    composes), the config passed on whole reaches only app modules: the parts below get typed
    sections (``TrainJob``, ``ServedJob``...), and verl gets its own config through ``TrainJob.verl``."""
    modules = read_modules()
    apps = [name for name in modules if name.count(".") and floor(name) == len(FLOORS) - 1]
    below = {}
    for module in apps:
        for qualname, function in modules[module].functions.items():
            holds = "cfg" in [a.arg for a in function.args.args] or composed_names(function)
            if holds:
                reached = trip(f"{module}:{qualname}", "cfg", modules).functions
                below.update({f: module for f in reached if floor(f.split(":")[0]) < len(FLOORS) - 1})
    assert below == {}
