//===- RuntimeBindings.cpp - Input generator and host identity in Python --===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The deterministic random numbers, index streams and access histograms the
// tools generate and measure with (InputGenerator.h), and the machine
// description cost-model bundles record (HostInfo.h), for the Python side's
// table pool, collection, training and front end.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Sharding/TableRules.h"
#include "neuroshard/Support/HostInfo.h"

#include "llvm/Support/FormatVariadic.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>

namespace py = pybind11;
using namespace llvm;
using namespace neuroshard;
using namespace neuroshard::python;
using inputs::Random;

/// `values` as a one-dimensional NumPy array.
template <typename T>
static py::array_t<T> toArray(const std::vector<T> &values) {
  py::array_t<T> array(values.size());
  std::copy(values.begin(), values.end(), array.mutable_data());
  return array;
}

/// `count`, a number of values to draw, or an error naming `what`.
static size_t countOf(StringRef what, int64_t count) {
  if (count < 0)
    throw NeuroShardError(
        formatv("{0} must be non-negative, got {1}", what, count).str());
  return static_cast<size_t>(count);
}

static void populateInputGenerator(py::module_ &m) {
  py::class_<Random>(m, "Random",
                     "SplitMix64, the generator of every random choice the "
                     "tools make: the same outputs on every machine.")
      .def(py::init<uint64_t>(), py::arg("seed"))
      .def("next", &Random::next, "The next 64-bit output.")
      .def("uniform", &Random::uniform, "Uniform in [0, 1).")
      .def(
          "below",
          [](Random &random, uint64_t bound) {
            if (bound == 0)
              throw NeuroShardError("the bound must be positive, got 0");
            return random.below(bound);
          },
          py::arg("bound"), "Uniform in [0, bound).")
      .def("poisson", &Random::poisson, py::arg("mean"),
           "Poisson-distributed with the given mean.")
      .def(
          "uniform_block",
          [](Random &random, int64_t count) {
            py::array_t<double> values(countOf("count", count));
            for (double &value :
                 MutableArrayRef<double>(values.mutable_data(), values.size()))
              value = random.uniform();
            return values;
          },
          py::arg("count"),
          "The next `count` uniform() values as a NumPy array.");

  m.def("hash_string", &inputs::hashString, py::arg("text"),
        "The 64-bit FNV-1a hash that keys generators by table name.");
  m.def("mix_seed", &inputs::mixSeed, py::arg("a"), py::arg("b"),
        "Mixes two values into one seed.");
  m.def(
      "zipf_index_stream",
      [](int64_t rows, double skew, int64_t length, uint64_t seed) {
        if (RuleViolation v = checkRows(rows))
          throw NeuroShardError(*v);
        size_t size = countOf("length", length);
        return toArray(inputs::zipfIndexStream(rows, skew, size, seed));
      },
      py::arg("rows"), py::arg("skew"), py::arg("length"), py::arg("seed"),
      "`length` row indices in [0, rows) with Zipf-like popularity (exponent "
      "`skew`), hot rows scattered over the table: the table pool's index "
      "streams. A pure function of its arguments.");
  m.def(
      "access_histogram",
      [](const py::array_t<int64_t, py::array::c_style | py::array::forcecast>
             &indices) {
        std::vector<int64_t> stream(indices.data(),
                                    indices.data() + indices.size());
        std::array<double, kNumAccessBins> bins =
            inputs::accessHistogram(stream);
        return std::vector<double>(bins.begin(), bins.end());
      },
      py::arg("indices"),
      "The 17-bin access histogram of an index stream (docs/design.md §3): the "
      "fractions of the distinct rows hit once, (2^(j-1), 2^j] times for bin "
      "j of 1..15, and more than 2^15 times; all zero for no indices.");
  m.def(
      "generate_lookup",
      [](const std::string &name, int64_t rows, double poolingFactor,
         const std::vector<double> &accessHist, int64_t batchSize,
         uint64_t seed, uint64_t stream, int64_t rowLimit) {
        if (RuleViolation v = checkRows(rows))
          throw NeuroShardError(*v);
        if (RuleViolation v = checkStatistics(poolingFactor, accessHist))
          throw NeuroShardError(*v);
        inputs::TableStats table;
        table.name = name;
        table.rows = rows;
        table.poolingFactor = poolingFactor;
        std::copy(accessHist.begin(), accessHist.end(),
                  table.accessHist.begin());
        inputs::LookupInputs lookup = inputs::generateLookup(
            table, countOf("batch_size", batchSize), seed, stream, rowLimit);
        return py::make_tuple(toArray(lookup.indices), toArray(lookup.offsets));
      },
      py::arg("name"), py::arg("rows"), py::arg("pooling_factor"),
      py::arg("access_hist"), py::arg("batch_size"), py::arg("seed"),
      py::arg("stream") = 0, py::arg("row_limit") = 0,
      "(indices, offsets) of one lookup of batch_size bags, as neuroshard-run "
      "generates it for the table `name`: Poisson bag lengths with the "
      "pooling factor, distinct-row hit counts following the histogram; "
      "offsets has batch_size + 1 entries. row_limit > 0 uses only the first "
      "row_limit rows.");
}

/// {"cpu_family", "cpu_model_number", "isa"}, leaving out what is unknown.
static py::dict identityDict(const CPUIdentity &identity) {
  py::dict dict;
  if (identity.family)
    dict["cpu_family"] = *identity.family;
  if (identity.modelNumber)
    dict["cpu_model_number"] = *identity.modelNumber;
  dict["isa"] = identity.isa;
  return dict;
}

static py::dict cachesDict(const std::string &cacheDir) {
  py::dict caches;
  for (const auto &[name, kb] : hostCachesKB(cacheDir))
    caches[py::str(name)] = kb;
  return caches;
}

/// The CPUIdentity a bundle's "host" record states, and whether it lists the
/// flags. Fields of other types are not compared, as the record's reader
/// refuses them.
static std::pair<CPUIdentity, bool> recordedIdentity(const py::dict &host) {
  CPUIdentity identity;
  auto number = [&](const char *key) -> std::optional<int64_t> {
    if (!host.contains(key))
      return std::nullopt;
    py::handle value = host[key];
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value))
      return std::nullopt;
    return value.cast<int64_t>();
  };
  identity.family = number("cpu_family");
  identity.modelNumber = number("cpu_model_number");
  bool hasISA = false;
  if (host.contains("isa") && py::isinstance<py::list>(host["isa"])) {
    hasISA = true;
    for (const py::handle &flag : host["isa"].cast<py::list>()) {
      if (!py::isinstance<py::str>(flag))
        return {identity, false};
      identity.isa.push_back(flag.cast<std::string>());
    }
    std::sort(identity.isa.begin(), identity.isa.end());
  }
  return {identity, hasISA};
}

static void populateHostInfo(py::module_ &m) {
  std::vector<std::string> flags(std::begin(kISAFlags), std::end(kISAFlags));
  m.attr("ISA_FLAGS") = py::tuple(py::cast(flags));
  m.def(
      "host_cpu_model",
      [](const std::string &cpuinfo) { return hostCPUModel(cpuinfo); },
      py::arg("cpuinfo") = "/proc/cpuinfo",
      "The first \"model name\" of /proc/cpuinfo, or 'unknown CPU': what the "
      "tools record as a measurement's \"hardware\".");
  m.def(
      "host_cpu_identity",
      [](const std::string &cpuinfo) {
        return identityDict(hostCPUIdentity(cpuinfo));
      },
      py::arg("cpuinfo") = "/proc/cpuinfo",
      "{\"cpu_family\", \"cpu_model_number\", \"isa\"} from /proc/cpuinfo: "
      "what tells chips with one model name apart; a number it does not "
      "report is left out, isa lists which of ISA_FLAGS it has, sorted.");
  m.def("host_caches_kb", &cachesDict,
        py::arg("cache_dir") = "/sys/devices/system/cpu/cpu0/cache",
        "{\"L1d\", \"L2\", \"L3\"} -> KiB of the first core's data and "
        "unified caches (Linux's sysfs); a cache not reported is left out.");
  m.def(
      "host_description",
      [](const std::string &cpuinfo, const std::string &cacheDir) {
        py::dict host;
        host["cpu_model"] = hostCPUModel(cpuinfo);
        for (const auto &item : identityDict(hostCPUIdentity(cpuinfo)))
          host[item.first] = item.second;
        host["caches_kb"] = cachesDict(cacheDir);
        py::object cpus = py::module_::import("os").attr("cpu_count")();
        host["logical_cpus"] = cpus.is_none() ? py::int_(1) : cpus;
        return host;
      },
      py::arg("cpuinfo") = "/proc/cpuinfo",
      py::arg("cache_dir") = "/sys/devices/system/cpu/cpu0/cache",
      "The \"host\" a cost-model bundle records (docs/cost-model.md): "
      "{\"cpu_model\", \"cpu_family\", \"cpu_model_number\", \"isa\", "
      "\"caches_kb\", \"logical_cpus\"}.");
  m.def(
      "other_chip",
      [](const py::object &recorded,
         const std::string &cpuinfo) -> std::optional<std::string> {
        if (!py::isinstance<py::dict>(recorded))
          return std::nullopt;
        auto [identity, hasISA] = recordedIdentity(recorded);
        CPUIdentity here = hostCPUIdentity(cpuinfo);
        if (!isOtherChip(identity, hasISA, here))
          return std::nullopt;
        return formatv("{0} there; {1} here",
                       describeCPUIdentity(identity, hasISA),
                       describeCPUIdentity(here, true))
            .str();
      },
      py::arg("recorded"), py::arg("cpuinfo") = "/proc/cpuinfo",
      "How a bundle's recorded \"host\" names another chip than this one "
      "('family 26, avx512f there; family 25, model 1, avx avx2 here'), as "
      "the neural cost model warns; None when it is the same chip as far as "
      "the record says.");
}

void neuroshard::python::populateRuntime(py::module_ &m) {
  populateInputGenerator(m);
  populateHostInfo(m);
}
