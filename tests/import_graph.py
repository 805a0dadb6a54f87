"""The project's import graph, read from the code: cycles, and module names used twice.

    python tests/import_graph.py          # prints cycles and repeated names; exit 1 when there are any

Every ``import``/``from ... import`` counts, module level or inside a function (a function-level
import that closes a circle is still a circle a reader has to follow). Modules: ``wowgrass/``, the
command line (``cli/``, installed as ``wowgrass.cli``) and ``benchmarks/`` (which import each other
as top-level scripts).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# names that may repeat: a format and the layer that uses it ("formats/wmo.py" and a renderer's
# "sources/wmo.py" are one thing in two layers), the command line's areas, package markers
NAMES_EXEMPT_UNDER = ("wowgrass/formats/", "cli/")
MARKERS = {"__init__", "__main__"}


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package, the CLI and the benchmarks."""
    mods = {}
    for base, prefix in ((ROOT / "wowgrass", "wowgrass"), (ROOT / "cli", "wowgrass.cli")):
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([prefix, *parts])] = path
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        mods[path.stem] = path  # run as scripts: they import each other by bare name
    return mods


def _resolve(mod: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in its body)."""
    mods = project_modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                # `from pkg import sub` imports the submodule, not the package's own names
                base = _resolve(mod, path, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                if t in mods and t != mod:
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def repeated_names() -> dict[str, list[str]]:
    """Module or package names used by more than one place in the package (outside formats/ and cli/)."""
    seen = defaultdict(list)
    for path in sorted((ROOT / "wowgrass").rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if "__pycache__" in rel or rel.startswith(NAMES_EXEMPT_UNDER):
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            seen[path.name].append(rel + "/")
        elif path.suffix == ".py" and path.stem not in MARKERS:
            seen[path.stem].append(rel)
    return {name: places for name, places in seen.items() if len(places) > 1}


def main() -> int:
    found = cycles(import_graph())
    for comp in found:
        print("import cycle: " + " <-> ".join(comp))
    names = repeated_names()
    for name, places in sorted(names.items()):
        print(f"name used twice: {name}: " + ", ".join(places))
    if not found and not names:
        print(f"no import cycles among {len(project_modules())} modules; no repeated module names")
    return 1 if found or names else 0


if __name__ == "__main__":
    sys.exit(main())
