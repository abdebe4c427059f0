//===- InputGenerator.cpp - Deterministic lookup inputs and weights -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/InputGenerator.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace neuroshard {
namespace inputs {

uint64_t Random::next() {
  state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Random::uniform() {
  return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t Random::below(uint64_t bound) { return next() % bound; }

int64_t Random::poisson(double mean) {
  if (mean <= 0.0)
    return 0;
  if (mean > 64.0) {
    // Normal approximation (Box-Muller) for large means.
    double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    double z =
        std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    double draw = mean + std::sqrt(mean) * z;
    // Means a table's rules allow are far below 2^62; clamp beyond them
    // rather than round out of range.
    return draw <= 0.0 ? 0 : std::llround(std::min(draw, 0x1p62));
  }
  // Knuth's multiplication method.
  double limit = std::exp(-mean), product = uniform();
  int64_t count = 0;
  while (product > limit) {
    ++count;
    product *= uniform();
  }
  return count;
}

uint64_t hashString(const std::string &text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t mixSeed(uint64_t a, uint64_t b) {
  Random random(a ^ (b * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL));
  return random.next();
}

/// Hit-count range of histogram bin j: bin 0 is exactly 1, bin j in
/// (2^(j-1), 2^j], bin 16 above 2^15 (capped at 2^16 here).
static void binRange(unsigned bin, int64_t &low, int64_t &high) {
  if (bin == 0) {
    low = high = 1;
    return;
  }
  low = (int64_t(1) << (bin - 1)) + 1;
  high = int64_t(1) << bin;
}

/// A permutation of [0, n) as an affine map with a multiplier coprime to n.
namespace {
struct RowPermutation {
  RowPermutation(int64_t n, Random &random) : n(n) {
    offset = static_cast<int64_t>(random.below(static_cast<uint64_t>(n)));
    multiplier = 1;
    for (int attempt = 0; attempt < 64 && n > 1; ++attempt) {
      int64_t candidate = static_cast<int64_t>(random.below(n - 1)) + 1;
      if (gcd(candidate, n) == 1) {
        multiplier = candidate;
        break;
      }
    }
  }
  int64_t operator()(int64_t k) const {
    return static_cast<int64_t>(
        (static_cast<__int128>(k) * multiplier + offset) % n);
  }
  static int64_t gcd(int64_t a, int64_t b) {
    while (b != 0) {
      int64_t t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
  int64_t n, multiplier, offset;
};
} // namespace

LookupInputs rowBlockInputs(const LookupInputs &lookup, int64_t rowBegin,
                            int64_t rowEnd) {
  LookupInputs block;
  block.offsets.reserve(lookup.offsets.size());
  block.offsets.push_back(0);
  for (size_t b = 0; b + 1 < lookup.offsets.size(); ++b) {
    for (int64_t i = lookup.offsets[b]; i < lookup.offsets[b + 1]; ++i) {
      int64_t row = lookup.indices[size_t(i)];
      if (row >= rowBegin && row < rowEnd)
        block.indices.push_back(row - rowBegin);
    }
    block.offsets.push_back(int64_t(block.indices.size()));
  }
  return block;
}

LookupInputs bagSliceInputs(const LookupInputs &lookup, int64_t bagBegin,
                            int64_t bagEnd) {
  LookupInputs slice;
  int64_t first = lookup.offsets[size_t(bagBegin)];
  int64_t end = lookup.offsets[size_t(bagEnd)];
  slice.indices.assign(lookup.indices.begin() + first,
                       lookup.indices.begin() + end);
  slice.offsets.reserve(size_t(bagEnd - bagBegin + 1));
  for (int64_t b = bagBegin; b <= bagEnd; ++b)
    slice.offsets.push_back(lookup.offsets[size_t(b)] - first);
  return slice;
}

int64_t keptRow(int64_t row, int64_t kept, int64_t rows) {
  if (kept == rows || rows <= 0)
    return row;
  return int64_t((unsigned __int128)row * uint64_t(kept) / uint64_t(rows));
}

LookupInputs generateLookup(const TableStats &table, int64_t batchSize,
                            uint64_t seed, uint64_t stream, int64_t rowLimit) {
  Random random(mixSeed(mixSeed(seed, hashString(table.name)), stream));
  LookupInputs result;
  result.offsets.resize(static_cast<size_t>(batchSize) + 1, 0);
  double histTotal = 0.0;
  for (double v : table.accessHist)
    histTotal += v;
  double pooling = histTotal > 0.0 ? table.poolingFactor : 0.0;
  for (int64_t b = 0; b < batchSize; ++b)
    result.offsets[b + 1] = result.offsets[b] + random.poisson(pooling);
  int64_t total = result.offsets[batchSize];
  if (total == 0)
    return result;

  int64_t rows = table.rows;
  if (rowLimit > 0 && rowLimit < rows)
    rows = rowLimit;

  // Mean hit count of a distinct row under the histogram, hence the number of
  // distinct rows the stream touches.
  double meanHits = 0.0;
  for (unsigned j = 0; j < kNumAccessBins; ++j) {
    int64_t low, high;
    binRange(j, low, high);
    meanHits += table.accessHist[j] / histTotal * 0.5 * double(low + high);
  }
  int64_t distinct = std::max<int64_t>(
      1, std::min<int64_t>(rows, std::llround(double(total) / meanHits)));

  // Hit counts per distinct row: bins in proportion, counts inside each bin's
  // range, largest bins first so rounding never starves the hot rows.
  std::vector<int64_t> counts;
  counts.reserve(static_cast<size_t>(distinct));
  for (int j = static_cast<int>(kNumAccessBins) - 1; j >= 0; --j) {
    int64_t low, high;
    binRange(static_cast<unsigned>(j), low, high);
    int64_t n =
        std::llround(table.accessHist[j] / histTotal * double(distinct));
    for (int64_t k = 0; k < n && int64_t(counts.size()) < distinct; ++k)
      counts.push_back(low + static_cast<int64_t>(random.below(
                                 static_cast<uint64_t>(high - low + 1))));
  }
  if (counts.empty())
    counts.push_back(1);

  RowPermutation permutation(rows, random);
  result.indices.reserve(static_cast<size_t>(total));
  // Emit each distinct row its number of times; cycle if the counts fall
  // short of the stream length, stop once it is full.
  for (size_t k = 0; int64_t(result.indices.size()) < total; ++k) {
    size_t slot = k % counts.size();
    int64_t row = permutation(static_cast<int64_t>(slot));
    for (int64_t h = 0;
         h < counts[slot] && int64_t(result.indices.size()) < total; ++h)
      result.indices.push_back(row);
  }
  // Fisher-Yates shuffle spreads every row's hits over the bags.
  for (int64_t i = total - 1; i > 0; --i) {
    int64_t j =
        static_cast<int64_t>(random.below(static_cast<uint64_t>(i + 1)));
    std::swap(result.indices[i], result.indices[j]);
  }
  return result;
}

std::vector<int64_t> zipfIndexStream(int64_t rows, double skew, int64_t length,
                                     uint64_t seed, uint64_t draw) {
  Random random(seed);
  RowPermutation permutation(rows, random);
  if (draw != 0)
    random = Random(mixSeed(seed, draw));
  // Inverse-CDF sampling of the bounded power law; skew 1 is the logarithmic
  // limit of the general formula.
  double top = double(rows) + 1.0;
  double exponent = 1.0 - skew;
  bool logarithmic = std::abs(skew - 1.0) < 1e-9;
  double span = logarithmic ? 0.0 : std::pow(top, exponent) - 1.0;
  std::vector<int64_t> indices(
      static_cast<size_t>(std::max<int64_t>(0, length)));
  for (int64_t &index : indices) {
    double u = random.uniform();
    double x = logarithmic ? std::pow(top, u)
                           : std::pow(span * u + 1.0, 1.0 / exponent);
    int64_t rank = static_cast<int64_t>(std::floor(x)) - 1;
    rank = std::max<int64_t>(0, std::min(rank, rows - 1));
    index = permutation(rank);
  }
  return indices;
}

int64_t zipfRankRow(int64_t rows, uint64_t seed, int64_t rank) {
  Random random(seed);
  return RowPermutation(rows, random)(rank);
}

std::array<double, kNumAccessBins>
accessHistogram(const std::vector<int64_t> &indices) {
  std::array<double, kNumAccessBins> hist{};
  std::unordered_map<int64_t, int64_t> hits;
  for (int64_t index : indices)
    ++hits[index];
  if (hits.empty())
    return hist;
  for (const auto &entry : hits) {
    int64_t count = entry.second;
    unsigned bin = 0;
    if (count > 1) {
      bin = 1;
      while (bin < kNumAccessBins - 1 && count > (int64_t(1) << bin))
        ++bin;
    }
    hist[bin] += 1.0;
  }
  for (double &v : hist)
    v /= double(hits.size());
  return hist;
}

static float unitValue(uint64_t key, int64_t a, int64_t b) {
  uint64_t h = mixSeed(key ^ (static_cast<uint64_t>(a) * 0xd6e8feb86659fd93ULL),
                       static_cast<uint64_t>(b));
  // 24 random bits mapped to [-1, 1).
  return static_cast<float>(static_cast<int64_t>(h >> 40) - (1 << 23)) /
         static_cast<float>(1 << 23);
}

float weightValue(uint64_t tableKey, int64_t row, int64_t column) {
  return unitValue(tableKey, row, column);
}

float gradientValue(uint64_t lookupKey, int64_t bag, int64_t column) {
  return unitValue(lookupKey ^ 0x5bd1e9955bd1e995ULL, bag, column);
}

void fillWeights(uint64_t tableKey, int64_t rows, int64_t colBegin,
                 int64_t width, float *out, int64_t rowStride,
                 int64_t rowBegin) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      out[r * rowStride + c] =
          weightValue(tableKey, rowBegin + r, colBegin + c);
}

} // namespace inputs
} // namespace neuroshard
