#===- __init__.py - The NeuroShard Python package -------------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""NeuroShard's Python side.

What users import: the C++ core (neuroshard._core, a pybind11 module) owns
the table rules, tasks and the planner with its cost models, the input
generator and the host's identity; `neuroshard.plan(task, devices=...,
memory_gb=..., cost_model=...)` plans as `neuroshard-plan` does and returns
its plan JSON as a dict, neuroshard.torchrec.plan takes TorchRec-style
tables (neuroshard.torchrec_plan builds TorchRec's sharding plan from a
plan), and neuroshard.frontend is the PyTorch front end.

The calibration pipeline (`python3 -m neuroshard.calibrate`): the neural
cost models (neuroshard.cost_model) and their TorchScript bundle export,
which the planner loads, and what feeds them: the synthetic table pool
(neuroshard.table_pool), cost-data collection (neuroshard.collect),
training (neuroshard.train) and its report (neuroshard.report,
neuroshard.metrics), the batch-scaling curve (neuroshard.batch_scaling),
refining a bundle on the sets measured selection timed
(neuroshard.experience), the host's selection noise
(neuroshard.selection_noise, which times plans' device sets with
neuroshard.set_timing) and a GPU's calibration (neuroshard.gpu_calibrate).

The evaluation of plans against the baselines and the other experiments are
the bench's (bench/, package neuroshard_bench): it imports this package,
which never imports it."""

import difflib
import functools
import importlib
import pkgutil
import re

# An installed package holds its C++ module beside these files. A build tree
# builds the module into <build>/lib/python3/dist-packages/neuroshard, and
# PYTHONPATH names both that and the sources' python/ directory: the package
# is then looked up in every `neuroshard` directory on the path.
__path__ = pkgutil.extend_path(__path__, __name__)

# Imported on first use, so that the package's pure-Python parts (such as
# neuroshard.torchrec_plan) import without the C++ module.
_CORE = __name__ + "._core"
_FROM_CORE = ("plan", "NeuroShardError")
_NO_CORE = (
    "NeuroShard's C++ module (%s) is in none of the package's directories "
    "(%s). From a source tree, build it with `bash scripts/build.sh`, then "
    "name the build's Python directory beside the sources: "
    "PYTHONPATH=python:build/lib/python3/dist-packages (for a build "
    "elsewhere, BUILD/lib/python3/dist-packages). An installed NeuroShard "
    "holds the module beside the package.")


def _load_core():
    """neuroshard._core, or an ImportError that says how to build it or put
    it on the path where it is not found."""
    try:
        return importlib.import_module(_CORE)
    except ModuleNotFoundError as e:
        if e.name != _CORE:
            raise
        raise ImportError(_NO_CORE % (_CORE, ", ".join(__path__)),
                          name=_CORE) from None


def _keywords(function):
    """The keyword names a function of the C++ module takes, read from the
    signature pybind11 writes first in its docstring; None where the
    signature does not list them."""
    first = (function.__doc__ or "").lstrip().split("\n", 1)[0]
    if not first.startswith(function.__name__ + "(") or "**" in first:
        return None
    return set(re.findall(r"[(,]\s*(\w+)\s*:", first))


def _unknown_keywords(function, options):
    """"'NAME' (did you mean 'CLOSE'?)" for each key of `options` that
    `function` does not take, or [] (also where that cannot be told)."""
    taken = _keywords(function)
    if not taken:
        return []
    unknown = []
    for name in sorted(set(options) - taken):
        close = difflib.get_close_matches(name, sorted(taken), n=1)
        unknown.append("'%s'%s" % (name, " (did you mean '%s'?)" % close[0]
                                   if close else ""))
    return unknown


def _with_keywords_named(name):
    """The C++ module's function `name`, as the module has it when called,
    whose TypeError for a keyword it does not take names that keyword, as
    a Python function's does."""
    @functools.wraps(getattr(_load_core(), name))
    def call(*args, **options):
        function = getattr(_load_core(), name)
        try:
            return function(*args, **options)
        except TypeError:
            unknown = _unknown_keywords(function, options)
            if not unknown:
                raise
        raise TypeError("%s() got %s keyword argument%s %s" %
                        (name, "an unexpected" if len(unknown) == 1 else
                         "unexpected", "" if len(unknown) == 1 else "s",
                         ", ".join(unknown)))
    return call


def __getattr__(name):
    if name == "_core":
        # `from neuroshard import _core` asks here first.
        return _load_core()
    if name == "plan":
        plan = _with_keywords_named("plan")
        globals()["plan"] = plan
        return plan
    if name in _FROM_CORE:
        return getattr(_load_core(), name)
    raise AttributeError("module 'neuroshard' has no attribute '%s'" % name)


def __dir__():
    return sorted(set(globals()) | set(_FROM_CORE))
