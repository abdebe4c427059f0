//===- CoreModule.cpp - The neuroshard._core Python module ----------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The module the Python package calls for everything the C++ core owns: the
// table rules, tasks and the planner with its cost models, the input
// generator and the host's identity. Importing it registers the cost models
// and the shipped bundles installed beside it, as a tool's main() does.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "neuroshard/CostModel/CostModelFactory.h"
#include "neuroshard/CostModel/InitCostModels.h"
#include "neuroshard/Execution/SetTiming.h"
#include "neuroshard/Support/Version.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <dlfcn.h>

namespace py = pybind11;
using namespace neuroshard;
using namespace neuroshard::python;

/// The absolute directory of this module's shared object, or "" if the
/// loader cannot say.
static std::string moduleDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&moduleDirectory), &info) ||
      !info.dli_fname)
    return "";
  llvm::SmallString<256> path(info.dli_fname);
  if (llvm::sys::fs::make_absolute(path))
    return "";
  return llvm::sys::path::parent_path(path).str();
}

/// Where `cost_model="default"` finds the shipped bundles of the package
/// this module belongs to: share/neuroshard/models under the prefix it is
/// installed in, or in the build tree, whose layout is the same
/// (NEUROSHARD_PACKAGE_TO_MODELS is that path relative to the module's
/// directory). The program is python3 here, so the directory next to the
/// program's bin/ that the tools use names another prefix.
static void addPackageModelsDir() {
  std::string dir = moduleDirectory();
  if (dir.empty())
    return;
  llvm::SmallString<256> models(dir);
  llvm::sys::path::append(models, NEUROSHARD_PACKAGE_TO_MODELS);
  llvm::sys::path::remove_dots(models, /*remove_dot_dot=*/true);
  addDefaultModelSearchDir(models);
}

PYBIND11_MODULE(_core, m) {
  m.doc() = "NeuroShard's C++ core: table rules, tasks and the planner with "
            "its cost models, the input generator and host identity.";
  m.attr("__version__") = projectVersion();
  py::register_exception<NeuroShardError>(m, "NeuroShardError",
                                          PyExc_ValueError);
  registerAvailableCostModels();
  execution::registerKernelSetTimer();
  addPackageModelsDir();
  populateTableRules(m);
  populatePlanner(m);
  populateRuntime(m);
}
