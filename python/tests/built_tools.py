#===- built_tools.py - Where the tests find the build's tools ------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def tool(name):
    """The path of a built tool (NEUROSHARD_TOOLS_DIR, else build/bin); the
    test is skipped when it is not built."""
    path = os.path.join(os.environ.get("NEUROSHARD_TOOLS_DIR",
                                       os.path.join(REPO, "build", "bin")),
                        name)
    if not os.access(path, os.X_OK):
        pytest.skip("%s is not built (%s)" % (name, path))
    return path
