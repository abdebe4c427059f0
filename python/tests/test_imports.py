#===- test_imports.py - What the package's modules import -----------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The package's three parts stay apart: what users import, the
calibration pipeline, and the bench (bench/neuroshard_bench), which may
import the package but never the other way round; and no module imports
itself back through others, at module level or inside a function."""

import ast
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGE_DIR = os.path.join(REPO, "python", "neuroshard")
BENCH_DIR = os.path.join(REPO, "bench", "neuroshard_bench")
BENCH = "neuroshard_bench"
# The harness modules that moved from the package to the bench: no module
# of that name may come back into the package.
HARNESS = ("evaluate", "evaluate_distributed", "stress")


def modules(directory, package):
    """{dotted name: path} of the package's Python sources."""
    found = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            stem = name[:-3]
            found[package if stem == "__init__" else
                  "%s.%s" % (package, stem)] = os.path.join(directory, name)
    return found


def imported_names(path, module):
    """Every name an import statement of the file names (module level and
    inside functions alike): `import a.b` names a.b, `from a import b`
    names a and a.b (b may be a module), relative imports resolved against
    `module`."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = os.path.basename(path) == "__init__.py"
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parent = parts if is_package else parts[:-1]
                parent = parent[:len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            names.add(base)
            names.update("%s.%s" % (base, alias.name)
                         for alias in node.names)
    return names


def import_graph(sources):
    """{module: the modules of `sources` it imports}."""
    return {module: sorted(n for n in imported_names(path, module)
                           if n in sources and n != module)
            for module, path in sources.items()}


def find_cycle(graph):
    """One import cycle of `graph` as [a, b, ..., a], or None."""
    state = {}
    stack = []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for target in graph[module]:
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_imports_inside_functions_and_cycles_are_found(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os.path\nfrom p import a, b as c\n"
                      "def f():\n    from . import d\n"
                      "    from .e import g\n")
    assert imported_names(str(source), "p.m") == {
        "os.path", "p", "p.a", "p.b", "p.d", "p.e", "p.e.g"}
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == \
        ["a", "b", "c", "a"]


def test_no_module_imports_itself_back():
    sources = modules(PACKAGE_DIR, "neuroshard")
    sources.update(modules(BENCH_DIR, BENCH))
    graph = import_graph(sources)
    # The graph sees the imports it must: calibrate's of the pipeline, and
    # the bench's of the package.
    assert "neuroshard.selection_noise" in graph["neuroshard.calibrate"]
    assert "neuroshard.calibrate" in graph[BENCH + ".selection_noise"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: %s" % " -> ".join(cycle)


def test_the_package_never_imports_the_bench():
    for module, path in modules(PACKAGE_DIR, "neuroshard").items():
        bench = sorted(n for n in imported_names(path, module)
                       if n == BENCH or n.startswith(BENCH + "."))
        assert not bench, "%s imports %s" % (module, ", ".join(bench))
    for name in HARNESS:
        assert not os.path.exists(os.path.join(PACKAGE_DIR, name + ".py")), \
            "neuroshard.%s is the bench's (%s.%s)" % (name, BENCH, name)


def test_calibration_loads_no_module_of_the_bench():
    # A fresh interpreter, so that nothing this test run imported counts,
    # with the bench on the path, so that an import of it would succeed.
    path = os.pathsep.join([os.path.join(REPO, "python"),
                            os.path.join(REPO, "bench"),
                            os.environ.get("PYTHONPATH", "")])
    loaded = subprocess.run(
        [sys.executable, "-c", "import json, sys\n"
         "import neuroshard.calibrate\n"
         "print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, PYTHONPATH=path))
    names = json.loads(loaded.stdout)
    assert "neuroshard.calibrate" in names
    assert "neuroshard.selection_noise" in names
    harness = ["neuroshard." + name for name in HARNESS]
    found = [n for n in names if n == BENCH or n.startswith(BENCH + ".") or
             n in harness]
    assert not found, "import neuroshard.calibrate loads %s" % found
