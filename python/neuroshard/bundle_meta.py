#===- bundle_meta.py - A cost-model bundle's meta.json, read and written --===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The one reader and writer of a cost-model bundle's meta.json
(docs/neural-cost-model.md lists its fields; the planner reads it in C++,
lib/CostModel/Neural/BundleMeta.cpp).

cost_model.bundle_meta() makes a new bundle's fields and train adds its
record; write() writes them whole (a new bundle, or a refined one staged
beside it); set_field() sets one field of an existing bundle in place, as
the batch-scaling curve and the selection noise are added; read() and
read_checked() read it. Every function takes the caller's exception class,
so that each command reports the error in its own words (as jsonio does)."""

import json
import os
from typing import Any, Dict, Type

from neuroshard import jsonio

FILE_NAME = "meta.json"
# The files of a bundle: the models the planner loads and this metadata.
BUNDLE_FILES = ("compute.pt", "comm_fw.pt", "comm_bw.pt", FILE_NAME)


def path(bundle_dir: str) -> str:
    """The path of the bundle's meta.json."""
    return os.path.join(bundle_dir, FILE_NAME)


def read(bundle_dir: str, error: Type[Exception], what: str = "") -> Any:
    """The parsed meta.json of the bundle, unchecked; `what` names the file
    in errors ("" for the path alone)."""
    return jsonio.read_json(path(bundle_dir), what, error)


def read_checked(bundle_dir: str, error: Type[Exception]) -> Dict:
    """The bundle's meta.json, checked for what every reader of it needs: a
    "hardware" string and a positive integer "batch_size"."""
    if not os.path.isdir(bundle_dir):
        raise error("bundle '%s' is not a directory" % bundle_dir)
    meta_path = path(bundle_dir)
    meta = read(bundle_dir, error)
    if not isinstance(meta, dict) or not isinstance(meta.get("hardware"),
                                                    str):
        raise error("'%s' has no \"hardware\" string: is it a cost-model "
                    "bundle?" % meta_path)
    batch = meta.get("batch_size")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise error("'%s': \"batch_size\" must be a positive integer, got "
                    "%r" % (meta_path, batch))
    return meta


def write(bundle_dir: str, meta: Dict) -> None:
    """Writes `meta` as the bundle's meta.json, whole (indented by 2, as the
    shipped bundles are); the directory must exist."""
    with open(path(bundle_dir), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


def set_field(bundle_dir: str, key: str, value: Any,
              error: Type[Exception]) -> str:
    """Sets `key` of the bundle's meta.json to `value` in place (the other
    fields, their order and the file's indentation kept; jsonio.set_field);
    returns the file's path."""
    meta_path = path(bundle_dir)
    jsonio.set_field(meta_path, key, value, error)
    return meta_path
