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
