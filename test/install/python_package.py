#===- python_package.py - The installed Python package plans --------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Run by InstallPythonPackage.cmake as `python_package.py PREFIX TASK`, with
PYTHONPATH naming only the installed package's directory under PREFIX."""

import json
import os
import subprocess
import sys

prefix, task = sys.argv[1:]
root = os.path.realpath(prefix) + os.sep


def installed(path):
    return os.path.realpath(path).startswith(root)


import neuroshard  # noqa: E402
from neuroshard import _core  # noqa: E402

assert installed(neuroshard.__file__), neuroshard.__file__
assert installed(_core.__file__), _core.__file__
models = ["analytical"]
if _core.neural_cost_models_built():
    # The shipped bundle, found beside the package; the program (python3)
    # lives in another prefix.
    bundle = _core.find_default_model()
    assert installed(bundle), (bundle, _core.default_model_search_path())
    models.append("default")

tool = os.path.join(prefix, "bin", "neuroshard-plan")
for model in models:
    plan = neuroshard.plan(task, devices=2, cost_model=model)
    printed = subprocess.run([tool, task, "--devices", "2", "--cost-model",
                              model], check=True, capture_output=True,
                             text=True).stdout
    expected = json.loads(printed)
    # Search times differ from run to run; everything else is the same plan.
    del plan["search"]["time_ms"], expected["search"]["time_ms"]
    assert plan == expected, (model, plan, expected)
    print("neuroshard.plan with cost model '%s' (%s): the plan of "
          "neuroshard-plan" % (model, plan["cost_model"]))

# The package's Python modules are installed with it.
from neuroshard import table_pool, torchrec  # noqa: E402,F401
print("installed package %s: ok" % os.path.dirname(neuroshard.__file__))

# The bench (bench/) is not part of the package: it is not installed.
import importlib.util  # noqa: E402

package_dir = os.path.dirname(neuroshard.__file__)
for module in ("evaluate", "evaluate_distributed", "stress"):
    assert not os.path.exists(os.path.join(package_dir, module + ".py")), \
        module
assert importlib.util.find_spec("neuroshard_bench") is None
