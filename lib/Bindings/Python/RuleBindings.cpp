//===- RuleBindings.cpp - The table rules in Python -----------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Every rule of TableRules.h returns None when the value is allowed, or what
// is wrong with it in the words every C++ reader uses; a caller prefixes the
// thing checked ("'sparse.user': ").
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "neuroshard/Sharding/AccessEstimate.h"
#include "neuroshard/Sharding/Problem.h"
#include "neuroshard/Sharding/TableRules.h"

#include <pybind11/stl.h>

namespace py = pybind11;
using namespace neuroshard;

void neuroshard::python::populateTableRules(py::module_ &m) {
  m.attr("NUM_ACCESS_BINS") = kNumAccessBins;
  m.attr("COLUMN_ALIGNMENT") = kColumnAlignment;
  m.attr("ACCESS_HISTOGRAM_TOLERANCE") = kAccessHistogramTolerance;
  m.attr("MAX_TABLE_GB") = kMaxTableGB;
  m.attr("MAX_DEVICE_GB") = kMaxDeviceGB;
  m.attr("MAX_DEVICES") = kMaxDevices;
  m.attr("MAX_POOLING_FACTOR") = kMaxPoolingFactor;
  m.attr("BYTES_PER_GB") = kBytesPerGB;

  m.def(
      "element_type_bytes",
      [](const std::string &elementType) {
        return elementTypeBytes(elementType);
      },
      py::arg("element_type"),
      "Bytes per element of 'f32', 'f16' or 'bf16'; None for a type tables "
      "may not have.");
  m.def(
      "check_table_name",
      [](const std::string &name) { return checkTableName(name); },
      py::arg("name"));
  m.def(
      "check_element_type",
      [](const std::string &elementType) {
        return checkElementType(elementType);
      },
      py::arg("element_type"));
  m.def("check_rows", &checkRows, py::arg("rows"));
  m.def("check_dim", &checkDim, py::arg("dim"));
  m.def("check_table_bytes", &checkTableBytes, py::arg("rows"), py::arg("dim"),
        py::arg("element_bytes") = 4u,
        "A table of rows x dim elements of element_bytes must fit the "
        "largest size a table may have.");
  m.def("check_pooling_factor", &checkPoolingFactor, py::arg("pooling_factor"));
  m.def(
      "check_access_histogram",
      [](const std::vector<double> &bins) {
        return checkAccessHistogram(bins);
      },
      py::arg("bins"));
  m.def(
      "check_statistics",
      [](double poolingFactor, const std::vector<double> &bins) {
        return checkStatistics(poolingFactor, bins);
      },
      py::arg("pooling_factor"), py::arg("bins"),
      "One feature's statistics: check_pooling_factor, then "
      "check_access_histogram.");
  m.def(
      "check_access_histogram_for_batch",
      [](const std::vector<double> &bins, int64_t rows, double poolingFactor,
         int64_t batchSize) {
        // The batch rule assumes the statistics' own rules hold.
        if (RuleViolation v = checkStatistics(poolingFactor, bins))
          return v;
        return checkAccessHistogramForBatch(bins, rows, poolingFactor,
                                            batchSize);
      },
      py::arg("bins"), py::arg("rows"), py::arg("pooling_factor"),
      py::arg("batch_size"),
      "check_statistics, then: the histogram of one batch of batch_size bags "
      "must be one that batch can make, given the table's rows and pooling "
      "factor.");
  m.attr("DEFAULT_ZIPF_ALPHA") = kDefaultZipfAlpha;
  m.def("check_zipf_alpha", &checkZipfAlpha, py::arg("alpha"));
  m.def("expected_access_histogram", &expectedAccessHistogram, py::arg("rows"),
        py::arg("lookups"), py::arg("zipf_alpha") = kDefaultZipfAlpha,
        "The expected histogram of one batch of `lookups` (batch size x "
        "pooling factor) indices drawn from a power law of exponent "
        "zipf_alpha over `rows` rows (AccessEstimate.h).");
  m.def(
      "rescale_access_histogram",
      [](const std::vector<double> &bins, int64_t rows, double poolingFactor,
         int64_t fromBatch, int64_t toBatch) {
        return rescaleAccessHistogram(bins, rows, poolingFactor, fromBatch,
                                      toBatch);
      },
      py::arg("bins"), py::arg("rows"), py::arg("pooling_factor"),
      py::arg("from_batch"), py::arg("to_batch"),
      "The histogram `bins` of one batch of from_batch bags, carried to a "
      "batch of to_batch bags (AccessEstimate.h).");
  m.def("check_pinned_device", &checkPinnedDevice, py::arg("device"),
        py::arg("num_devices"));
  m.def("check_device_count", &checkDeviceCount, py::arg("num_devices"));
  m.def("check_capacity_gb", &checkCapacityGB, py::arg("gb"));
  m.def("check_reserved_fraction", &checkReservedFraction, py::arg("fraction"));
}
