#===- __init__.py - The NeuroShard Python package -------------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""NeuroShard's Python side. The C++ core (neuroshard._core, a pybind11
module) owns the table rules, tasks and the planner with its cost models, the
input generator and the host's identity; `neuroshard.plan(task, devices=...,
memory_gb=..., cost_model=...)` plans as `neuroshard-plan` does and returns
its plan JSON as a dict, and neuroshard.torchrec.plan takes TorchRec-style
tables. In Python: the neural cost models (neuroshard.cost_model) and their
TorchScript bundle export, which the planner loads, and the pre-training
pipeline that feeds them: the synthetic table pool (neuroshard.table_pool),
cost-data collection (neuroshard.collect), training (neuroshard.train) and
its report (neuroshard.report, neuroshard.metrics), and refining a bundle
on the sets measured selection timed (neuroshard.experience); the PyTorch
front end
(neuroshard.frontend); and the evaluation of plans against the baselines on
held-out tasks (neuroshard.evaluate)."""

import pkgutil

# An installed package holds its C++ module beside these files. A build tree
# builds the module into <build>/lib/python3/dist-packages/neuroshard, and
# PYTHONPATH names both that and the sources' python/ directory: the package
# is then looked up in every `neuroshard` directory on the path.
__path__ = pkgutil.extend_path(__path__, __name__)

# Imported on first use, so that the package's pure-Python parts import
# without the C++ module.
_FROM_CORE = ("plan", "NeuroShardError")


def __getattr__(name):
    if name in _FROM_CORE:
        from neuroshard import _core
        return getattr(_core, name)
    raise AttributeError("module 'neuroshard' has no attribute '%s'" % name)


def __dir__():
    return sorted(list(globals()) + list(_FROM_CORE))
