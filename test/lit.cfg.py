# -*- Python -*-
# lit configuration of the NeuroShard test suite.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "NeuroShard"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.neuroshard_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%neuroshard_src_root", config.neuroshard_src_root))
# Sanitizer builds preload ASan's runtime for python3, which loads the
# instrumented module (NEUROSHARD_PYTHON_TEST_ENVIRONMENT).
config.substitutions.append(
    ("%python", ("env %s %s" % (config.python_environment,
                                config.python_executable))
     if config.python_environment else config.python_executable))
# The trained bundles shipped in the source tree.
config.substitutions.append(
    ("%models", os.path.join(config.neuroshard_src_root, "models")))
config.substitutions.append(("%shlibdir", os.path.join(config.neuroshard_obj_root, "lib")))
config.substitutions.append(("%neuroshard_obj_root", config.neuroshard_obj_root))
config.substitutions.append(("%mlir_libdir", os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

if config.neuroshard_has_torch:
    config.available_features.add("torch")
# `python`: the Python package's C++ module is built, so `%python -m
# neuroshard.…` runs.
if config.neuroshard_has_python:
    config.available_features.add("python")
if config.neuroshard_has_cuda:
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit_dir))
# `ptxas`: the toolkit can turn PTX into cubins. `cuda`: a GPU and its driver
# are usable here, so tests may execute kernels.
if config.cuda_toolkit_dir and os.access(
        os.path.join(config.cuda_toolkit_dir, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
stub_driver = os.path.join(config.cuda_toolkit_dir or "", "lib64", "stubs",
                           "libcuda.so")
if config.cuda_toolkit_dir and os.path.exists(stub_driver):
    config.available_features.add("cuda-driver-stub")
    config.substitutions.append(("%cuda_stub_driver", stub_driver))
# `cuda-emulated-driver`: the CUDA driver whose device is the CPU is built,
# so that whole lowered modules and the CUDA runner run without a GPU.
emulated_driver = os.path.join(config.neuroshard_obj_root, "lib",
                               "libneuroshard_emulated_cuda_driver.so")
if config.neuroshard_has_cuda and os.path.exists(emulated_driver):
    config.available_features.add("cuda-emulated-driver")
    config.substitutions.append(("%emulated_cuda_driver", emulated_driver))
# `mpi`: neuroshard-comm-collect is built and `%mpiexec -n N` starts ranks
# (Open MPI refuses root unless told it is wanted, as in CI containers).
if config.neuroshard_has_mpi:
    config.available_features.add("mpi")
    mpiexec = config.mpiexec
    # Open MPI does not free all it allocates by MPI_Finalize; in sanitizer
    # builds (whose tests run with ASAN_OPTIONS set) its leaks are not ours.
    if "ASAN_OPTIONS" in os.environ:
        mpiexec = "env ASAN_OPTIONS=%s:detect_leaks=0 %s" % (
            os.environ["ASAN_OPTIONS"], mpiexec)
    config.substitutions.append(("%mpiexec", mpiexec))
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
# `nccl`: the exchange on NCCL (libneuroshard_nccl_exchange.so and
# neuroshard-nccl-check) is built; running it needs `cuda` too.
if config.neuroshard_has_nccl:
    config.available_features.add("nccl")
nvidia_smi = shutil.which("nvidia-smi")
if nvidia_smi and subprocess.run([nvidia_smi, "-L"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("cuda")

# Tools are looked up in the build tree first, then in LLVM's tools.
tool_dirs = [config.neuroshard_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["neuroshard-opt", "neuroshard-plan", "neuroshard-bench", "neuroshard-run",
     "neuroshard-cuda-runner", "neuroshard-cuda-emulate",
     "neuroshard-comm-collect", "neuroshard-nccl-check"], tool_dirs)
llvm_config.with_environment("PATH", config.neuroshard_tools_dir,
                             append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# `%python -m neuroshard.…` runs the package from the source tree, with its
# C++ module from the build tree (e.g. to export a cost-model bundle inside
# a test), without writing bytecode there.
llvm_config.with_environment(
    "PYTHONPATH", [os.path.join(config.neuroshard_src_root, "python"),
                   config.neuroshard_python_dir], append_path=True)
llvm_config.with_environment("PYTHONDONTWRITEBYTECODE", "1")
