// The sampled half of a schedule candidate: a sketch fixes which primitives apply, its decisions
// fix their parameters (tile sizes, unroll budget, how many loops are fused for threads, where a
// stage is computed, vector widths). Decisions are a flat vector of integers; applying a sketch
// asks for them one slot at a time through a DecisionTape, which either samples them or replays
// given ones.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tessera::autotune {

using Decisions = std::vector<int64_t>;

// What made a sampled schedule: its sketch, by name (indices depend on the rules of a version),
// and the decisions applied to it. The tuning database keeps it with each record a search
// proposed, so a later session mutates that record without searching for its decisions.
struct SketchDecisions {
  std::string sketch;
  Decisions values;
  bool operator==(const SketchDecisions& o) const { return sketch == o.sketch && values == o.values; }
};

struct DecisionSpec {
  enum class Kind { Tile, Choice };
  Kind kind = Kind::Choice;
  std::string name;  // what it decides: "matmul_out.i", "matmul.unroll", "softmax_exp.place"
  // Tile: the factors of the inner `levels` levels of a loop of `extent`, innermost first; the
  // outermost level takes what is left (rounded up, so factors need not divide the extent).
  int64_t extent = 1;
  int levels = 0;
  int64_t vector_lanes = 0;  // > 0: the innermost level is vectorized, so multiples of it are preferred
  // Choice: the values allowed, and how likely sampling picks each (empty: equally).
  std::vector<int64_t> options;
  std::vector<double> weights;
  int slots() const { return kind == Kind::Tile ? levels : 1; }
};

// Largest innermost tile factor sampled (as in Ansor): longer innermost loops spill registers.
constexpr int64_t kMaxInnermostFactor = 64;

// Random decisions for one spec (a tile: all its levels, innermost first).
std::vector<int64_t> sample_decision(const DecisionSpec& spec, std::mt19937_64& rng);
// A different value of one spec's slots: a tile moves a factor between two of its levels (the
// implied outermost one included), a choice takes another option. Returns `current` when the
// spec has a single value.
std::vector<int64_t> mutate_decision(const DecisionSpec& spec, const std::vector<int64_t>& current,
                                     std::mt19937_64& rng);
// Whether `values` (the spec's slots) are allowed: tile factors >= 1, choices among the options.
bool valid_decision(const DecisionSpec& spec, const std::vector<int64_t>& values);

class DecisionTape {
 public:
  enum class Mode { Sample, Replay };
  // Sample: fresh random decisions; Replay: exactly `given` (an Error if they do not fit the
  // sketch).
  static DecisionTape sample(std::mt19937_64& rng);
  static DecisionTape replay(Decisions given);

  // The next slot of `spec` (slot 0 .. spec.slots() - 1, asked in order).
  int64_t take(const DecisionSpec& spec, int slot);
  // A choice is one slot.
  int64_t choose(const DecisionSpec& spec) { return take(spec, 0); }

  // Replay: whether every given value was asked for.
  bool consumed() const { return cursor_ == values_.size(); }
  // The spec of every group asked for, in order (each spans spec.slots() values).
  const std::vector<DecisionSpec>& specs() const { return specs_; }

 private:
  DecisionTape(Mode mode, std::mt19937_64* rng, Decisions given) : mode_(mode), rng_(rng), values_(std::move(given)) {}
  Mode mode_;
  std::mt19937_64* rng_;
  Decisions values_;
  size_t cursor_ = 0;
  std::vector<int64_t> pending_;  // Sample: the rest of a tile group sampled at its first slot
  std::vector<DecisionSpec> specs_;
};

}  // namespace tessera::autotune
