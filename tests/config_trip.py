"""Where the root config travels: from an entry point, every call that passes the composed config
itself (not a section of it) on to another function, followed through the tree (read from the code).

    python -m tests.config_trip terminal_rl.train:main      the trip from one function, and its figures

A module counts as passed when the root config enters one of its functions; a return is a call that
hands it to another module and comes back (each cross-module hand-off). Closures that capture the
config belong to the function that defines them."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

from terminal_rl.config import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "terminal_rl"


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass
class Module:
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # qualname -> def
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name -> (module, name)


def read_modules() -> dict[str, Module]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = Module()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        module.functions[f"{node.name}.{item.name}"] = item
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    module.imported[alias.asname or alias.name] = (node.module, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    module.imported[alias.asname or alias.name.split(".")[0]] = (alias.name, "")
        modules[module_name(path)] = module
    return modules


def resolve(modules: dict[str, Module], module: str, callee: ast.expr) -> tuple[str, str] | None:
    """(module, qualname) of a call's target inside terminal_rl, or None (a library, a method of an
    object, a builtin)."""
    here = modules[module]
    if isinstance(callee, ast.Name):
        if callee.id in here.functions:
            return module, callee.id
        if f"{callee.id}.__init__" in here.functions:
            return module, f"{callee.id}.__init__"
        if callee.id in here.imported:
            target, name = here.imported[callee.id]
            return (target, name) if target in modules else None
    if isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name):
        owner = callee.value.id
        if f"{owner}.{callee.attr}" in here.functions:
            return module, f"{owner}.{callee.attr}"
        if owner in here.imported:
            target, name = here.imported[owner]
            if not name and target in modules:  # import terminal_rl.x as owner
                return target, callee.attr
            if f"{target}.{name}" in modules:  # from terminal_rl import x as owner
                return f"{target}.{name}", callee.attr
            if target in modules:  # an imported class
                return target, f"{name}.{callee.attr}"
    return None


def receiving_parameter(function: ast.FunctionDef, qualname: str, call: ast.Call, name: str) -> str | None:
    """The callee's parameter that the call fills with the variable ``name``."""
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if "." in qualname and params and params[0] in ("self", "cls"):
        params = params[1:]
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Name) and arg.id == name:
            return params[index] if index < len(params) else None
    for keyword in call.keywords:
        if isinstance(keyword.value, ast.Name) and keyword.value.id == name:
            return keyword.arg
    return None


@dataclass
class Trip:
    functions: list[str] = field(default_factory=list)  # module:qualname(parameter), in visiting order
    modules: set[str] = field(default_factory=set)
    returns: int = 0


def composed_names(function: ast.FunctionDef) -> set[str]:
    """Names a function binds to a config it composes itself (``cfg = compose(...)``)."""
    return {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for callee in [node.value.func]
        if getattr(callee, "id", getattr(callee, "attr", "")) in ("compose", "hydra_compose")
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def trip(start: str, parameter: str = "cfg", modules: dict[str, Module] | None = None) -> Trip:
    """Follow the root config from ``start`` ("module:qualname"), held in its ``parameter`` (and in
    any name the function binds to a config it composes)."""
    modules = modules or read_modules()
    found, seen = Trip(), set()

    def visit(module: str, qualname: str, name: str) -> None:
        if (module, qualname, name) in seen or qualname not in modules[module].functions:
            return
        seen.add((module, qualname, name))
        found.functions.append(f"{module}:{qualname}({name})")
        found.modules.add(module)
        for call in ast.walk(modules[module].functions[qualname]):
            if not isinstance(call, ast.Call):
                continue
            target = resolve(modules, module, call.func)
            if target is None or target[1] not in modules[target[0]].functions:
                continue
            received = receiving_parameter(modules[target[0]].functions[target[1]], target[1], call, name)
            if received is None:
                continue
            if target[0] != module:
                found.returns += 1
            visit(*target, received)

    module, qualname = start.split(":")
    for name in {parameter} | composed_names(modules[module].functions[qualname]):
        visit(module, qualname, name)
    return found


if __name__ == "__main__":
    result = trip(*sys.argv[1:])
    print("\n".join(result.functions))
    print(f"{len(result.modules)} modules passed, {result.returns} returns")
