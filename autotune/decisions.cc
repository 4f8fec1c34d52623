#include "autotune/decisions.h"

#include <algorithm>

#include "runtime/error.h"

namespace tessera::autotune {

namespace {

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) out.push_back(p), n /= p;
  if (n > 1) out.push_back(n);
  return out;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double uniform(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(0, 1)(rng); }

size_t pick(size_t n, std::mt19937_64& rng) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

// Levels outermost first: [implied outer, ..., innermost] from slots innermost first.
std::vector<int64_t> full_levels(const DecisionSpec& spec, const std::vector<int64_t>& inner) {
  int64_t product = 1;
  for (int64_t f : inner) product *= f;
  std::vector<int64_t> full{ceil_div(spec.extent, product)};
  full.insert(full.end(), inner.rbegin(), inner.rend());
  return full;
}

std::vector<int64_t> inner_slots(const std::vector<int64_t>& full) {
  return std::vector<int64_t>(full.rbegin(), full.rend() - 1);
}

// A tiling of the extent: usually a factorization (each prime factor goes to a random level),
// sometimes powers of two that need not divide (Tessera runs the tails separately). A vectorized
// innermost level prefers one to four vectors.
std::vector<int64_t> sample_tile(const DecisionSpec& spec, std::mt19937_64& rng) {
  const int n = spec.levels;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::vector<int64_t> full(n + 1, 1);
    bool perfect = uniform(rng) < 0.8;
    int64_t rest = spec.extent;
    int free_levels = n + 1;
    if (spec.vector_lanes > 0 && spec.extent >= spec.vector_lanes && uniform(rng) < 0.7) {
      int64_t inner = spec.vector_lanes << pick(3, rng);
      while (inner > spec.vector_lanes &&
             (inner > spec.extent || inner > kMaxInnermostFactor || (perfect && spec.extent % inner)))
        inner /= 2;
      if (!perfect || spec.extent % inner == 0) {
        full[n] = inner;
        rest = ceil_div(spec.extent, inner);
        free_levels = n;
      }
    }
    if (perfect) {
      for (int64_t p : prime_factors(rest)) full[pick(free_levels, rng)] *= p;
    } else {
      for (int level = free_levels - 1; level >= 1; --level) {
        int64_t f = int64_t(1) << pick(7, rng);
        while (f > 1 && f > rest) f /= 2;
        full[level] = f;
        rest = ceil_div(rest, f);
      }
    }
    std::vector<int64_t> inner = inner_slots(full);
    if (inner.empty() || inner[0] <= kMaxInnermostFactor) return inner;
  }
  return std::vector<int64_t>(n, 1);
}

std::vector<int64_t> mutate_tile(const DecisionSpec& spec, const std::vector<int64_t>& current, std::mt19937_64& rng) {
  std::vector<int64_t> full = full_levels(spec, current);
  int64_t product = 1;
  for (size_t l = 1; l < full.size(); ++l) product *= full[l];
  bool perfect = product * full[0] == spec.extent;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::vector<int64_t> next = full;
    if (perfect) {
      // Move one prime factor from a level to another (the outermost included).
      std::vector<size_t> sources;
      for (size_t l = 0; l < next.size(); ++l)
        if (next[l] > 1) sources.push_back(l);
      if (sources.empty() || next.size() < 2) return current;
      size_t src = sources[pick(sources.size(), rng)];
      size_t dst = pick(next.size() - 1, rng);
      if (dst >= src) ++dst;
      std::vector<int64_t> primes = prime_factors(next[src]);
      int64_t p = primes[pick(primes.size(), rng)];
      next[src] /= p;
      next[dst] *= p;
    } else {
      // Halve or double one inner level; the outermost follows.
      size_t l = 1 + pick(next.size() - 1, rng);
      next[l] = uniform(rng) < 0.5 || next[l] == 1 ? next[l] * 2 : next[l] / 2;
      next[l] = std::min(next[l], std::max<int64_t>(spec.extent, 1));
    }
    std::vector<int64_t> inner = inner_slots(next);
    if (inner != current && inner[0] <= kMaxInnermostFactor) return inner;
  }
  return sample_tile(spec, rng);
}

int64_t sample_choice(const DecisionSpec& spec, std::mt19937_64& rng) {
  if (spec.weights.size() != spec.options.size()) return spec.options[pick(spec.options.size(), rng)];
  std::discrete_distribution<size_t> d(spec.weights.begin(), spec.weights.end());
  return spec.options[d(rng)];
}

}  // namespace

std::vector<int64_t> sample_decision(const DecisionSpec& spec, std::mt19937_64& rng) {
  if (spec.kind == DecisionSpec::Kind::Tile) return sample_tile(spec, rng);
  return {sample_choice(spec, rng)};
}

std::vector<int64_t> mutate_decision(const DecisionSpec& spec, const std::vector<int64_t>& current,
                                     std::mt19937_64& rng) {
  if (spec.kind == DecisionSpec::Kind::Tile) return spec.levels == 0 ? current : mutate_tile(spec, current, rng);
  std::vector<int64_t> others;
  for (int64_t o : spec.options)
    if (o != current.at(0)) others.push_back(o);
  if (others.empty()) return current;
  return {others[pick(others.size(), rng)]};
}

bool valid_decision(const DecisionSpec& spec, const std::vector<int64_t>& values) {
  if (static_cast<int>(values.size()) != spec.slots()) return false;
  if (spec.kind == DecisionSpec::Kind::Tile)
    return std::all_of(values.begin(), values.end(),
                       [&](int64_t f) { return f >= 1 && f <= std::max<int64_t>(spec.extent, 1); });
  return std::find(spec.options.begin(), spec.options.end(), values[0]) != spec.options.end();
}

DecisionTape DecisionTape::sample(std::mt19937_64& rng) { return DecisionTape(Mode::Sample, &rng, {}); }
DecisionTape DecisionTape::replay(Decisions given) { return DecisionTape(Mode::Replay, nullptr, std::move(given)); }

int64_t DecisionTape::take(const DecisionSpec& spec, int slot) {
  if (slot == 0) specs_.push_back(spec);
  if (mode_ == Mode::Sample) {
    if (slot == 0) pending_ = sample_decision(spec, *rng_);
    return pending_.at(slot);
  }
  if (cursor_ >= values_.size())
    fail("schedule candidate: the sketch asks for decision '", spec.name, "' beyond the ", values_.size(), " given");
  if (slot == spec.slots() - 1) {
    // The whole group is known now: check it fits the spec.
    size_t first = cursor_ + 1 - spec.slots();
    std::vector<int64_t> group(values_.begin() + first, values_.begin() + cursor_ + 1);
    if (!valid_decision(spec, group))
      fail("schedule candidate: decision '", spec.name, "' has a value outside its range");
  }
  return values_[cursor_++];
}

}  // namespace tessera::autotune
