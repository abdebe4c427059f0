#===- test_package.py - The package's front door: import and keywords -----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os
import subprocess
import sys

import pytest

import neuroshard
from built_tools import REPO
from neuroshard import _core
from neuroshard import torchrec as nstr

TASK = os.path.join(REPO, "test", "neuroshard-plan", "Inputs", "torchrec.json")

# Run with the sources' python/ alone on the path: the package without its
# C++ module, as a source tree is before it is built.
WITHOUT_CORE = r'''
import json, sys
import neuroshard
if neuroshard.__path__ != [sys.argv[1]]:
    print(json.dumps({"elsewhere": neuroshard.__path__}))
    sys.exit(0)
# The pure-Python parts import without the C++ module.
from neuroshard import torchrec_plan
errors = {}
for name, statement in (("attribute", "neuroshard.plan"),
                        ("from", "from neuroshard import _core"),
                        ("calibrate", "import neuroshard.calibrate")):
    try:
        exec(statement)
    except ImportError as e:
        errors[name] = [type(e).__name__, e.name, str(e)]
print(json.dumps({"errors": errors}))
'''


def test_without_the_core_the_error_says_how_to_build_it(tmp_path):
    package = os.path.join(REPO, "python", "neuroshard")
    run = subprocess.run(
        [sys.executable, "-c", WITHOUT_CORE, package], capture_output=True,
        text=True, cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    if "elsewhere" in result:
        pytest.skip("another neuroshard package is on the path: %s" %
                    result["elsewhere"])
    errors = result["errors"]
    assert sorted(errors) == ["attribute", "calibrate", "from"]
    for kind, name, message in errors.values():
        assert (kind, name) == ("ImportError", "neuroshard._core")
        assert "bash scripts/build.sh" in message
        assert "PYTHONPATH=python:build/lib/python3/dist-packages" in message
        assert package in message


def test_unknown_plan_keywords_are_named():
    with pytest.raises(TypeError) as info:
        neuroshard.plan(TASK, devices=2, memory_gbs=0.3)
    assert str(info.value) == ("plan() got an unexpected keyword argument "
                               "'memory_gbs' (did you mean 'memory_gb'?)")
    with pytest.raises(TypeError) as info:
        neuroshard.plan(TASK, devices=2, cost_modle="analytical",
                        colour="blue")
    assert str(info.value) == (
        "plan() got unexpected keyword arguments 'colour', 'cost_modle' "
        "(did you mean 'cost_model'?)")
    # TorchRec's front door passes its options on to the planner.
    with pytest.raises(TypeError, match="unexpected keyword argument "
                       "'beam_widht' \\(did you mean 'beam_width'\\?\\)"):
        nstr.plan([{"name": "a", "num_embeddings": 1000,
                    "embedding_dim": 8, "pooling_factor": 1.0,
                    "access_hist": [1.0] + [0.0] * 16}],
                  {"world_size": 2, "hbm_cap": 2**30}, beam_widht=2)


def test_known_plan_keywords_keep_their_errors_and_help():
    # A keyword plan() takes, with a value it refuses, is not renamed.
    with pytest.raises(TypeError, match="incompatible function arguments"):
        neuroshard.plan(TASK, devices="two")
    with pytest.raises(TypeError, match="verify_top"):
        neuroshard.plan(TASK, devices=2, verify_top=True)
    assert neuroshard.plan.__doc__ == _core.plan.__doc__
    plan = neuroshard.plan(TASK, devices=2, memory_gb=0.3,
                           cost_model="analytical")
    assert plan == _core.plan(TASK, devices=2, memory_gb=0.3,
                              cost_model="analytical") | \
        {"search": plan["search"]}
