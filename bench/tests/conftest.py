#===- conftest.py - Shared fixtures of the bench's tests ------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The bench's tests use the fixtures of the package's tests
(python/tests/conftest.py: the fake timing tool, small pools) and their
helpers (python/tests/built_tools.py), loaded from there rather than
copied."""

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGE_TESTS = os.path.join(REPO, "python", "tests")

if PACKAGE_TESTS not in sys.path:
    sys.path.insert(0, PACKAGE_TESTS)

# Under a name of its own: this module is the one pytest knows as conftest.
_spec = importlib.util.spec_from_file_location(
    "neuroshard_package_conftest", os.path.join(PACKAGE_TESTS, "conftest.py"))
_package_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_package_conftest)

fake_set_ms = _package_conftest.fake_set_ms
write_fake_tool = _package_conftest.write_fake_tool
fake_tool = _package_conftest.fake_tool
shared_fake_tool = _package_conftest.shared_fake_tool
small_pool_path = _package_conftest.small_pool_path
collect_args = _package_conftest.collect_args
plan_with_bundle = _package_conftest.plan_with_bundle
fake_torchrec = _package_conftest.fake_torchrec
foreign_cpu_bundle = _package_conftest.foreign_cpu_bundle
