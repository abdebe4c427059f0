#===- test_bundle_errors.py - A damaged cost-model bundle, in one line ----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""A bundle whose TorchScript file is damaged is refused in one line that
names the bundle and the file, not with the model's source code."""

import json
import os
import shutil
import subprocess
import zipfile

from built_tools import REPO, tool

SHIPPED = os.path.join(REPO, "models", "cpu-zen5-b1024")
TASK = {"tables": [{"name": "a", "rows": 100, "dim": 8, "pooling_factor": 2,
                    "access_hist": [1.0] + [0.0] * 16}]}


def damaged_bundle(tmp_path, damage):
    bundle = tmp_path / "bundle"
    shutil.copytree(SHIPPED, bundle)
    source = zipfile.ZipFile(os.path.join(SHIPPED, "compute.pt"))
    with zipfile.ZipFile(bundle / "compute.pt", "w") as out:
        for item in source.infolist():
            out.writestr(item, damage(item.filename, source.read(item)))
    return bundle


def plan_with(tmp_path, bundle):
    task = tmp_path / "task.json"
    task.write_text(json.dumps(TASK))
    return subprocess.run([tool("neuroshard-plan"), str(task), "--devices",
                           "2", "--cost-model", str(bundle)],
                          capture_output=True, text=True)


def test_code_that_does_not_compile(tmp_path):
    bundle = damaged_bundle(
        tmp_path, lambda name, data: data.replace(b"torch.nn.", b"torch_nn.")
        if name.endswith(".py") else data)
    result = plan_with(tmp_path, bundle)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "neuroshard-plan: error: neural cost model bundle '%s': %s is not a "
        "readable TorchScript file: " % (bundle, bundle / "compute.pt"))
    assert "line " in lines[0]


def test_a_truncated_archive(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(SHIPPED, bundle)
    data = (bundle / "compute.pt").read_bytes()
    (bundle / "compute.pt").write_bytes(data[:len(data) // 2])
    result = plan_with(tmp_path, bundle)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "compute.pt is not a readable TorchScript file" in lines[0]
