#===- make_fixtures.py - Bundles and reference values for the C++ tests ---===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Usage: make_fixtures.py WORK_DIR

Reads WORK_DIR/query.json (written by NeuralCostModelTest.cpp) and writes
  WORK_DIR/comm4/     untrained bundle with comm models for 4 devices
  WORK_DIR/nocomm/    untrained bundle without comm models
  WORK_DIR/ensemble3/ untrained bundle whose compute model is an ensemble
                      of 3 members (so it estimates its uncertainty)
  WORK_DIR/reference.json  {"comm4": predictions, "nocomm": ...,
                      "ensemble3": ...}
                      from the TorchScript files' plain forward methods
  WORK_DIR/no_methods.pt     a TorchScript file without encode/head
  WORK_DIR/19_features.pt    a compute model that reads 19 features
One process does it all because importing torch dominates the test's time.
Exits with 77 when torch, or the package's C++ module (a build without the
Python module), cannot be imported, so the tests skip."""

import json
import os
import sys

try:
    import torch
    from neuroshard import _core  # noqa: F401
except ImportError:
    sys.exit(77)

from neuroshard import cost_model as cm


def main(work_dir: str) -> None:
    with open(os.path.join(work_dir, "query.json")) as f:
        query = json.load(f)
    reference = {}
    for name, seed, devices, members in (("comm4", 7, 4, 1),
                                         ("nocomm", 8, None, 1),
                                         ("ensemble3", 9, None, 3)):
        bundle = os.path.join(work_dir, name)
        cm.export_untrained(bundle, seed=seed, devices=devices,
                            batch_size=65536, members=members)
        reference[name] = cm.predict_query(bundle, query)
    with open(os.path.join(work_dir, "reference.json"), "w") as f:
        json.dump(reference, f)

    torch.jit.script(torch.nn.Linear(cm.NUM_FEATURES, 1)).save(
        os.path.join(work_dir, "no_methods.pt"))
    narrow = cm.ComputeCostModel()
    narrow.normalize = cm.Standardize(19)
    narrow.table_mlps[0][0] = torch.nn.Linear(19, 128)
    torch.jit.script(narrow).save(os.path.join(work_dir, "19_features.pt"))


if __name__ == "__main__":
    main(sys.argv[1])
