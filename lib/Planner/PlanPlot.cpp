//===- PlanPlot.cpp - A picture of a plan as SVG --------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/PlanPlot.h"
#include "neuroshard/Planner/PlanReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

using namespace llvm;

namespace neuroshard {

namespace {

/// Table colours, in table order: ten saturated, then ten light ones, so
/// that tables next to each other in a bar differ in hue. No greys: those
/// draw the communication and the tables grouped as "other".
constexpr const char *kTableColours[kMaxPlotTables] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#bcbd22", "#17becf", "#393b79", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
    "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#6b6ecf"};
constexpr const char *kOtherColour = "#c7c7c7";
constexpr const char *kBwCommColour = "#4d4d4d";
constexpr const char *kFwCommColour = "#8c8c8c";
/// Hatched fills (patterns defined in the file) for time and memory that
/// hold no work: the wait for the slowest device, the reserved memory.
constexpr const char *kWaitFill = "url(#wait)";
constexpr const char *kReservedFill = "url(#reserved)";

/// Layout, in px (the SVG's user units).
constexpr double kMinWidth = 940;
constexpr double kMargin = 16;
constexpr double kLabelRight = 76;
constexpr double kTimeLeft = 84;
constexpr double kTimeWidth = 400;
constexpr double kMemoryLeft = 544;
constexpr double kMemoryWidth = 330;
constexpr double kTitleY = 24;
constexpr double kHeadingY = 52;
constexpr double kRowsTop = 62;
constexpr double kLegendRowHeight = 18;
constexpr double kSwatch = 12;
/// Roughly the width of a character of the 12 px sans-serif text, to size
/// the legend's columns.
constexpr double kCharWidth = 7;

/// "1.25", "12", "0": at most `decimals` decimals, no trailing zeros.
std::string compact(double value, unsigned decimals = 2) {
  std::string text = formatv("{0}", format("%.*f", decimals, value)).str();
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.')
      text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

/// A value as the plan JSON writes it: 6 significant digits.
std::string jsonNumber(double value) {
  return formatv("{0}", format("%.6g", value == 0.0 ? 0.0 : value)).str();
}

/// `text` as XML character data or an attribute value. Table names are
/// valid UTF-8 without control characters (checkTableName), so escaping the
/// markup characters is all XML needs.
std::string escapeXML(StringRef text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      escaped += "&amp;";
      break;
    case '<':
      escaped += "&lt;";
      break;
    case '>':
      escaped += "&gt;";
      break;
    case '"':
      escaped += "&quot;";
      break;
    case '\'':
      escaped += "&apos;";
      break;
    default:
      escaped += c;
    }
  }
  return escaped;
}

/// An axis from 0 to `max` rounded up to a tick: ticks 1, 2, 2.5 or 5 times
/// a power of ten apart, about five of them.
struct Axis {
  double step = 1.0;
  double max = 1.0;

  explicit Axis(double value) {
    if (!(value > 0.0) || !std::isfinite(value))
      return;
    double raw = value / 5.0;
    double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double fraction = raw / magnitude;
    step = magnitude * (fraction <= 1.0   ? 1.0
                        : fraction <= 2.0 ? 2.0
                        : fraction <= 2.5 ? 2.5
                        : fraction <= 5.0 ? 5.0
                                          : 10.0);
    max = std::ceil(value / step - 1e-9) * step;
  }
  unsigned ticks() const {
    return static_cast<unsigned>(std::lround(max / step));
  }
};

/// What the plot draws of one table, or of the tables grouped as "other".
struct Entry {
  std::string label;
  std::string colour;
  /// The table's index, or "other".
  std::string key;
};

/// The plan's numbers, split by the entries of the legend.
struct PlotData {
  std::vector<Entry> entries;
  /// [device][entry]: compute (ms) and memory (GB) of the entry's shards.
  std::vector<std::vector<double>> computeMs, memoryGB;
};

PlotData collect(ArrayRef<TableSpec> tables, const Topology &topology,
                 const PlanResult &result) {
  unsigned n = topology.numDevices();
  ArrayRef<Shard> shards = result.plan.shards;
  // The embedding bytes a shard's lookups read and write per bag (every
  // index's row piece, one pooled output per feature; a row piece reads
  // its rows' share of the indices, a replica its device's share of the
  // bags): the share of its device's compute it is drawn with. Never zero:
  // a width is at least 4 and a shard writes at least one output per bag.
  std::vector<double> traffic, deviceTraffic(n, 0.0);
  for (const Shard &shard : shards) {
    TableSpec spec =
        pieceSpec(tables[shard.table], shard.slice(), n, topology.batchSize);
    traffic.push_back((spec.totalPoolingFactor() + spec.numFeatures()) *
                      double(shard.width()) * spec.elementBytes);
    deviceTraffic[shard.device] += traffic.back();
  }
  std::vector<double> shardMs, shardGB;
  std::vector<double> tableMs(tables.size(), 0.0), tableGB(tables.size(), 0.0);
  for (auto [shard, bytes] : zip_equal(shards, traffic)) {
    shardMs.push_back(result.cost.devices[shard.device].computeMs * bytes /
                      deviceTraffic[shard.device]);
    const TableSpec &table = tables[shard.table];
    shardGB.push_back(
        topology.shardBytes(table, shard.width(), shard.numRows(table)) /
        kBytesPerGB);
    tableMs[shard.table] += shardMs.back();
    tableGB[shard.table] += shardGB.back();
  }

  // Past kMaxPlotTables tables, name those with the largest share of either
  // panel and group the rest.
  std::vector<bool> named(tables.size(), true);
  if (tables.size() > kMaxPlotTables) {
    double allMs = std::accumulate(tableMs.begin(), tableMs.end(), 0.0);
    double allGB = std::accumulate(tableGB.begin(), tableGB.end(), 0.0);
    std::vector<double> visibility(tables.size());
    for (size_t t = 0; t < tables.size(); ++t)
      visibility[t] = std::max(allMs > 0 ? tableMs[t] / allMs : 0.0,
                               allGB > 0 ? tableGB[t] / allGB : 0.0);
    std::vector<size_t> order(tables.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return visibility[a] > visibility[b];
    });
    for (size_t rank = kMaxPlotTables - 1; rank < order.size(); ++rank)
      named[order[rank]] = false;
  }

  PlotData data;
  std::vector<size_t> entryOf(tables.size());
  for (auto [t, table] : enumerate(tables)) {
    if (!named[t])
      continue;
    entryOf[t] = data.entries.size();
    data.entries.push_back(
        {table.name, kTableColours[data.entries.size()], std::to_string(t)});
  }
  size_t others = llvm::count(named, false);
  if (others) {
    for (size_t t = 0; t < tables.size(); ++t)
      if (!named[t])
        entryOf[t] = data.entries.size();
    data.entries.push_back(
        {formatv("other ({0} tables)", others).str(), kOtherColour, "other"});
  }
  data.computeMs.assign(n, std::vector<double>(data.entries.size(), 0.0));
  data.memoryGB.assign(n, std::vector<double>(data.entries.size(), 0.0));
  for (auto [i, shard] : enumerate(shards)) {
    data.computeMs[shard.device][entryOf[shard.table]] += shardMs[i];
    data.memoryGB[shard.device][entryOf[shard.table]] += shardGB[i];
  }
  return data;
}

/// Writes the SVG elements; every coordinate goes through compact().
class SVGWriter {
public:
  explicit SVGWriter(raw_ostream &os) : os(os) {}

  void rect(StringRef attributes, double x, double y, double width,
            double height, StringRef fill, StringRef title = "") {
    os << "<rect " << attributes << (attributes.empty() ? "" : " ")
       << formatv("x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
                  "fill=\"{4}\"",
                  compact(x), compact(y), compact(width), compact(height),
                  fill);
    if (title.empty()) {
      os << "/>\n";
      return;
    }
    os << "><title>" << escapeXML(title) << "</title></rect>\n";
  }
  void line(StringRef attributes, double x1, double y1, double x2, double y2) {
    os << "<line " << attributes << (attributes.empty() ? "" : " ")
       << formatv("x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{3}\"/>\n",
                  compact(x1), compact(y1), compact(x2), compact(y2));
  }
  void text(StringRef attributes, double x, double y, StringRef content) {
    os << "<text " << attributes << (attributes.empty() ? "" : " ")
       << formatv("x=\"{0}\" y=\"{1}\">", compact(x), compact(y))
       << escapeXML(content) << "</text>\n";
  }

  /// An axis under the rows of a panel: grid lines, ticks, their values
  /// and the axis title.
  void drawAxis(StringRef name, const Axis &axis, double left, double width,
                double top, double bottom, StringRef title) {
    double scale = width / axis.max;
    os << formatv("<g class=\"axis\" data-axis=\"{0}\" data-max=\"{1}\">\n",
                  name, jsonNumber(axis.max));
    for (unsigned i = 0; i <= axis.ticks(); ++i) {
      double value = i * axis.step, x = left + value * scale;
      line("class=\"grid\"", x, top, x, bottom);
      line("class=\"tick\"", x, bottom, x, bottom + 4);
      text(formatv("class=\"tick-label\" data-value=\"{0}\" "
                   "text-anchor=\"middle\"",
                   jsonNumber(value))
               .str(),
           x, bottom + 16, formatv("{0}", format("%g", value)).str());
    }
    line("class=\"axis-line\"", left, bottom, left + width, bottom);
    text("class=\"axis-title\" text-anchor=\"middle\"", left + width / 2,
         bottom + 34, title);
    os << "</g>\n";
  }

private:
  raw_ostream &os;
};

} // namespace

void writePlanSVG(raw_ostream &os, ArrayRef<TableSpec> tables,
                  const Topology &topology, const PlanResult &result) {
  unsigned n = topology.numDevices();
  PlotData data = collect(tables, topology, result);

  double rowHeight = n <= 16 ? 22 : n <= 48 ? 16 : 11;
  double barHeight = std::round(rowHeight * 0.7);
  double rowsBottom = kRowsTop + n * rowHeight + 2;

  // The legend: tables, then what the bars draw besides them.
  struct LegendItem {
    std::string label, fill, key;
  };
  std::vector<LegendItem> legend;
  for (const Entry &entry : data.entries)
    legend.push_back({entry.label, entry.colour, entry.key});
  legend.push_back({"backward comm", kBwCommColour, "bw-comm"});
  legend.push_back({"forward comm", kFwCommColour, "fw-comm"});
  legend.push_back({"wait for the slowest device", kWaitFill, "wait"});
  if (topology.reservedFraction > 0)
    legend.push_back({"reserved memory", kReservedFill, "reserved"});
  size_t longest = 0;
  for (const LegendItem &item : legend)
    longest = std::max(longest, item.label.size());
  double columnWidth = kSwatch + 6 + kCharWidth * longest + 18;
  double width = std::max(kMinWidth, 2 * kMargin + columnWidth);
  unsigned columns =
      std::max(1u, static_cast<unsigned>((width - 2 * kMargin) / columnWidth));
  unsigned legendRows = (legend.size() + columns - 1) / columns;
  double legendTop = rowsBottom + 56;
  double height = legendTop + legendRows * kLegendRowHeight + kMargin;

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                "height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n",
                compact(width), compact(height));
  os << "<style>.grid{stroke:#e6e6e6}.tick,.axis-line{stroke:#444}"
        ".capacity{stroke:#222;stroke-width:1.5}"
        ".device-memory{stroke:#bbb}text{fill:#222}"
        ".title{font-size:15px;font-weight:bold}"
        ".heading{font-weight:bold}</style>\n";
  os << "<defs>"
        "<pattern id=\"wait\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"6\" height=\"6\" fill=\"#fff\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#999\" "
        "stroke-width=\"2\"/></pattern>"
        "<pattern id=\"reserved\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(-45)\">"
        "<rect width=\"6\" height=\"6\" fill=\"#f4f4f4\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#ccc\" "
        "stroke-width=\"1\"/></pattern></defs>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";

  SVGWriter svg(os);
  std::string nodes = topology.numNodes() > 1
                          ? formatv(" ({0} nodes of {1})", topology.numNodes(),
                                    topology.nodeSize())
                                .str()
                          : std::string();
  svg.text("class=\"title\"", kMargin, kTitleY,
           formatv("NeuroShard plan: {0} on {1} devices{2}, cost model {3}, "
                   "cost {4} ms",
                   planOriginName(result), n, nodes, result.costModelName,
                   format("%.4f", result.cost.maxMs))
               .str());
  svg.text("class=\"heading\"", kTimeLeft, kHeadingY,
           "Predicted time per step");
  svg.text("class=\"heading\"", kMemoryLeft, kHeadingY,
           "Memory used and usable capacity");

  // Time: the terms of every device, with the waits for the slowest device
  // drawn apart: the wait at the forward exchange, which the forward comm
  // includes (stragglerWaitMs, as the table and the JSON report it), and
  // the wait after the device's total for the plan's cost to pass.
  std::vector<double> barrierWaits = stragglerWaitMs(result.cost);
  Axis timeAxis(result.cost.maxMs);
  double msScale = kTimeWidth / timeAxis.max;
  svg.drawAxis("time", timeAxis, kTimeLeft, kTimeWidth, kRowsTop - 4,
               rowsBottom, "time (ms)");
  for (unsigned d = 0; d < n; ++d) {
    const DeviceCost &cost = result.cost.devices[d];
    double barrierWait = barrierWaits[d];
    double endWait = std::max(0.0, result.cost.maxMs - cost.totalMs());
    double rowTop = kRowsTop + d * rowHeight;
    double y = rowTop + (rowHeight - barHeight) / 2;
    svg.text("class=\"device-label\" text-anchor=\"end\" "
             "dominant-baseline=\"central\"",
             kLabelRight, rowTop + rowHeight / 2,
             formatv("device {0}", d).str());
    os << formatv("<g class=\"time-bar\" data-device=\"{0}\" "
                  "data-total-ms=\"{1}\">\n",
                  d, jsonNumber(cost.totalMs()));
    double at = 0.0;
    auto segment = [&](StringRef attributes, double ms, StringRef fill,
                       const std::string &title) {
      if (!(ms > 0.0))
        return;
      svg.rect(formatv("{0} data-ms=\"{1}\"", attributes, jsonNumber(ms)).str(),
               kTimeLeft + at * msScale, y, ms * msScale, barHeight, fill,
               title);
      at += ms;
    };
    for (auto [e, entry] : enumerate(data.entries))
      segment(formatv("class=\"compute\" data-table=\"{0}\"", entry.key).str(),
              data.computeMs[d][e], entry.colour,
              formatv("device {0}: {1}, {2} ms of compute", d, entry.label,
                      format("%.4f", data.computeMs[d][e]))
                  .str());
    segment("class=\"bw-comm\"", cost.bwCommMs, kBwCommColour,
            formatv("device {0}: backward comm {1} ms", d,
                    format("%.4f", cost.bwCommMs))
                .str());
    segment("class=\"wait\" data-at=\"exchange\"", barrierWait, kWaitFill,
            formatv("device {0}: waits {1} ms at the forward exchange for "
                    "the slowest device",
                    d, format("%.4f", barrierWait))
                .str());
    double exchangeMs = cost.fwCommMs - barrierWait;
    segment("class=\"fw-comm\"", exchangeMs, kFwCommColour,
            formatv("device {0}: forward comm {1} ms", d,
                    format("%.4f", exchangeMs))
                .str());
    segment("class=\"wait\" data-at=\"end\"", endWait, kWaitFill,
            formatv("device {0}: done after {1} ms, waits {2} ms for the "
                    "slowest device",
                    d, format("%.4f", cost.totalMs()), format("%.4f", endWait))
                .str());
    os << "</g>\n";
  }

  // Memory: every table's shards against the usable capacity.
  double largestGB = 0.0;
  for (unsigned d = 0; d < n; ++d)
    largestGB = std::max(largestGB, topology.memoryGB[d]);
  Axis memoryAxis(largestGB);
  double gbScale = kMemoryWidth / memoryAxis.max;
  svg.drawAxis("memory", memoryAxis, kMemoryLeft, kMemoryWidth, kRowsTop - 4,
               rowsBottom, "memory (GB)");
  for (unsigned d = 0; d < n; ++d) {
    double capacity = topology.memoryGB[d];
    double usable = topology.usableBytes(d) / kBytesPerGB;
    double used = 0.0;
    for (double gb : data.memoryGB[d])
      used += gb;
    double rowTop = kRowsTop + d * rowHeight;
    double y = rowTop + (rowHeight - barHeight) / 2;
    os << formatv("<g class=\"memory-bar\" data-device=\"{0}\" "
                  "data-used-gb=\"{1}\" data-usable-gb=\"{2}\" "
                  "data-capacity-gb=\"{3}\">\n",
                  d, jsonNumber(used), jsonNumber(usable),
                  jsonNumber(capacity));
    std::string percent = formatv(
        "{0}%", format("%.0f", usable > 0 ? 100.0 * used / usable : 0.0));
    std::string summary =
        formatv("device {0}: {1} of {2} GB used ({3})", d, format("%.2f", used),
                format("%.2f", usable), percent);
    svg.rect("class=\"device-memory\"", kMemoryLeft, y, capacity * gbScale,
             barHeight, "#fff", summary);
    if (capacity > usable)
      svg.rect("class=\"reserved\"", kMemoryLeft + usable * gbScale, y,
               (capacity - usable) * gbScale, barHeight, kReservedFill,
               formatv("device {0}: {1} GB reserved", d,
                       format("%.2f", capacity - usable))
                   .str());
    double at = 0.0;
    for (auto [e, entry] : enumerate(data.entries)) {
      double gb = data.memoryGB[d][e];
      if (!(gb > 0.0))
        continue;
      svg.rect(
          formatv("class=\"memory\" data-table=\"{0}\" data-gb=\"{1}\"",
                  entry.key, jsonNumber(gb))
              .str(),
          kMemoryLeft + at * gbScale, y, gb * gbScale, barHeight, entry.colour,
          formatv("device {0}: {1}, {2} GB", d, entry.label, format("%.3f", gb))
              .str());
      at += gb;
    }
    double capacityX = kMemoryLeft + usable * gbScale;
    svg.line("class=\"capacity\"", capacityX, y - 2, capacityX,
             y + barHeight + 2);
    svg.text("class=\"memory-percent\" dominant-baseline=\"central\"",
             kMemoryLeft + kMemoryWidth + 6, rowTop + rowHeight / 2, percent);
    os << "</g>\n";
  }

  os << "<g class=\"legend\">\n";
  for (auto [i, item] : enumerate(legend)) {
    double x = kMargin + (i % columns) * columnWidth;
    double y = legendTop + (i / columns) * kLegendRowHeight;
    os << formatv("<g class=\"legend-entry\" data-key=\"{0}\">\n", item.key);
    svg.rect("stroke=\"#888\" stroke-width=\"0.5\"", x, y, kSwatch, kSwatch,
             item.fill);
    svg.text("dominant-baseline=\"central\"", x + kSwatch + 6, y + kSwatch / 2,
             item.label);
    os << "</g>\n";
  }
  os << "</g>\n</svg>\n";
}

} // namespace neuroshard
