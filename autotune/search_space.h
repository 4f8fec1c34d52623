// The search space of one kernel, built from its compute definition alone: the sketches (the
// default template's schedule first; the templates' knobs, when the kernel's templates have any;
// then those of autotune/sketch_rules.h) and candidates = (sketch, decisions). A candidate
// becomes a schedule by applying its sketch to a fresh schedule of the kernel; that schedule's
// trace is what gets measured and stored, and it replays alone. The database stores a measured
// candidate's sketch (by name) and decisions beside its trace, so records of earlier sessions can
// be mutated like fresh samples.
#pragma once
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autotune/decisions.h"
#include "autotune/sketch_rules.h"
#include "relay_ir/compute_of_call.h"
#include "schedule/schedule.h"
#include "tensor_ir/stmt.h"

namespace tessera::autotune {

struct Candidate {
  int sketch = 0;  // index into SearchSpace::sketches(); 0 is the default template's schedule
  Decisions decisions;
  bool operator==(const Candidate& o) const { return sketch == o.sketch && decisions == o.decisions; }
};

class SearchSpace {
 public:
  explicit SearchSpace(relay_ir::CallCompute compute);

  const relay_ir::CallCompute& compute() const { return compute_; }
  const std::vector<Sketch>& sketches() const { return sketches_; }
  // The decision groups of a sketch, in the order its candidates' decisions hold them.
  const std::vector<DecisionSpec>& layout(int sketch) const { return layouts_.at(sketch); }
  // The default template's schedule as a candidate (what tuning starts from).
  static Candidate default_candidate() { return {0, {}}; }

  // Every candidate of the templates' knobs but the default's own, those changing fewer knobs
  // first; none when the kernel has no knobs or more than `limit` such candidates.
  std::vector<Candidate> template_candidates(size_t limit) const;
  // A sketch other than the default with random decisions (which may still fail to lower:
  // callers filter).
  Candidate sample(std::mt19937_64& rng) const;
  // One decision group changed (a tile factor moved between levels, another unroll budget,
  // parallel granularity, place, vector width).
  Candidate mutate(const Candidate& c, std::mt19937_64& rng) const;
  // Each decision group from one parent or the other; parents must share their sketch.
  Candidate crossover(const Candidate& a, const Candidate& b, std::mt19937_64& rng) const;

  // A fresh schedule of the kernel with the candidate applied; throws tessera::Error if the
  // decisions do not fit its sketch or a primitive rejects them.
  std::unique_ptr<schedule::Schedule> apply(const Candidate& c) const;
  // The candidate's trace as JSON (what the database stores).
  std::string trace_json(const Candidate& c) const { return apply(c)->trace().to_json(); }
  // A fresh schedule with a trace replayed on it.
  std::unique_ptr<schedule::Schedule> replay(const std::string& trace_json) const;
  // The kernel under `s`: arguments are the inputs, then the outputs (as the driver builds it).
  // For a GPU, lowered for the device and verified against its limits (threads and shared memory
  // per block): a candidate the device cannot run throws here, before it is measured.
  tensor_ir::LoweredFunc lower(schedule::Schedule& s, const std::string& name = "kernel") const;
  // A candidate as the database stores it (its sketch by name), and back: the candidate, if this
  // space has a sketch of that name (the rules of another version may not).
  SketchDecisions stored(const Candidate& c) const { return {sketches_.at(c.sketch).name, c.decisions}; }
  std::optional<Candidate> candidate(const SketchDecisions& stored) const;

 private:
  // Applies a sketch other than the default to `s`, a fresh schedule of the kernel, its
  // decisions from `tape`.
  void apply_sketch_to(const Sketch& sketch, schedule::Schedule& s, DecisionTape& tape) const;

  relay_ir::CallCompute compute_;
  std::vector<Sketch> sketches_;
  std::vector<std::vector<DecisionSpec>> layouts_;
  schedule::Trace default_trace_;
  int template_sketch_ = -1;  // the knobs' sketch, if any
};

}  // namespace tessera::autotune
