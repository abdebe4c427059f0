// RUN: neuroshard-opt %s -verify-diagnostics --neuroshard-to-cuda="chip=gfx90a"
// RUN: not neuroshard-opt %s --neuroshard-to-cuda="chip=sm_9" 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not neuroshard-opt %s --neuroshard-to-cuda="features=ptx80" 2>&1 | FileCheck %s --check-prefix=FEATURE
// RUN: not neuroshard-opt %s --neuroshard-to-cuda="opt-level=4" 2>&1 | FileCheck %s --check-prefix=LEVEL
// RUN: neuroshard-opt %s --neuroshard-to-cuda="chip=sm_90a features=+ptx80" | FileCheck %s --check-prefix=GOOD

// expected-error @below {{invalid chip 'gfx90a': expected sm_<N> with an optional 'a' or 'f' suffix, such as sm_90 or sm_90a}}
module {
}

// SHORT: error: invalid chip 'sm_9': expected sm_<N>
// FEATURE: error: invalid feature 'ptx80' in features: expected a comma list such as +ptx80
// LEVEL: error: invalid opt-level 4: expected 0, 1, 2 or 3
// GOOD: gpu.module @neuroshard_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
