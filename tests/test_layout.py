"""The package's layout stays readable: no import circles, one meaning per module name, a small
renderer top level (docs/architecture.md; the checks are tests/import_graph.py's)."""

from pathlib import Path

from import_graph import ROOT, cycles, import_graph, project_modules, repeated_names


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_graph_sees_imports_inside_functions():
    # the checker must find what it is meant to forbid: a circle closed by a function-level import
    graph = import_graph()
    assert "wowgrass.render.world.streaming" in graph["wowgrass.render.app"]  # imported inside open_scene
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_module_names_mean_one_thing():
    assert repeated_names() == {}


def test_render_top_level_is_small():
    top = [p for p in (ROOT / "wowgrass" / "render").glob("*.py")]
    assert len(top) <= 12, sorted(p.name for p in top)


def test_every_module_is_installed():
    # setuptools lists packages explicitly: a new folder missing from pyproject would not install
    import re

    text = (ROOT / "pyproject.toml").read_text()
    listed = set(re.findall(r'"([\w.]+)"', re.search(r"^packages = \[(.*?)\]", text, re.M | re.S).group(1)))
    packages = {m for m, p in project_modules().items() if Path(p).name == "__init__.py"}
    assert packages <= listed, sorted(packages - listed)


def test_package_top_is_small():
    # the package's top shows the pipeline in folders; only plumbing stays beside them
    top = sorted(p.name for p in (ROOT / "wowgrass").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= 6, top
    folders = {p.name for p in (ROOT / "wowgrass").iterdir() if (p / "__init__.py").exists()}
    assert {"formats", "game", "grass", "edit", "render", "export", "samples", "workbench"} <= folders, sorted(folders)


def test_lower_layers_do_not_import_upper_ones():
    # formats know nothing of the game's meaning; the game knows nothing of grass; neither renders
    order = ["formats", "game", "grass"]
    graph = import_graph()
    for module, imported in graph.items():
        parts = module.split(".")
        if len(parts) < 3 or parts[0] != "wowgrass" or parts[1] not in order:
            continue
        above = order[order.index(parts[1]) + 1:] + ["render", "export", "edit", "workbench", "cli"]
        bad = sorted(i for i in imported if i.split(".")[1:2] and i.split(".")[1] in above)
        assert not bad, (module, bad)


def test_nothing_below_the_workbench_imports_it():
    # workbench/ (the edit session, watching, the view's panels) sits above render/ and edit/: they
    # and every layer below them never import it, so the batch commands and the plain view stand alone
    graph = import_graph()
    below = {"formats", "game", "grass", "edit", "render", "export", "samples"}
    bad = sorted((m, i) for m, imported in graph.items()
                 if m.split(".")[1:2] and m.split(".")[1] in below
                 for i in imported if i.startswith("wowgrass.workbench"))
    assert not bad, bad
    # and the checker sees such an import: the workbench itself imports edit/ (so edges are found)
    assert any(i.startswith("wowgrass.edit") for i in graph["wowgrass.workbench.session"])
