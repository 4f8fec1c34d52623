#include "autotune/search_space.h"

#include <algorithm>

#include "runtime/error.h"
#include "schedule/lower.h"
#include "schedule/templates/cpu.h"
#include "schedule/templates/default.h"
#include "schedule/templates/gpu.h"
#include "tensor_ir/transforms/verify_device.h"

namespace tessera::autotune {

namespace {

// Tries before a sketch whose samples never apply is dropped from the space.
constexpr int kLayoutTries = 32;

// The templates' knobs answered from a decision tape, each knob one choice.
class TapeKnobs : public schedule::TemplateKnobs {
 public:
  explicit TapeKnobs(DecisionTape& tape) : tape_(tape) {}

 protected:
  int64_t pick(const std::string& name, const std::vector<int64_t>& options) override {
    DecisionSpec spec;
    spec.kind = DecisionSpec::Kind::Choice;
    spec.name = name;
    spec.options = options;
    return tape_.choose(spec);
  }

 private:
  DecisionTape& tape_;
};

// Whether some knob has more than one value (TapeKnobs asks only choices).
bool offers_choice(const std::vector<DecisionSpec>& specs) {
  for (const auto& spec : specs)
    if (spec.options.size() > 1) return true;
  return false;
}

}  // namespace

SearchSpace::SearchSpace(relay_ir::CallCompute compute) : compute_(std::move(compute)) {
  Sketch fallback;
  fallback.name = "default";
  fallback.is_default = true;
  sketches_.push_back(fallback);
  layouts_.emplace_back();
  try {
    default_trace_ = schedule::default_schedule(compute_.outputs, compute_.anchor, compute_.hardware)->trace();
  } catch (const std::exception&) {
    // No template fits: the default is the unscheduled loop nest (an empty trace).
  }
  Sketch knobs;
  knobs.name = "template_knobs";
  knobs.is_template = true;
  std::vector<Sketch> sketches{knobs};
  for (auto& sketch : generate_sketches(compute_.outputs, compute_.hardware)) sketches.push_back(std::move(sketch));
  std::mt19937_64 rng(0);
  for (auto& sketch : sketches) {
    for (int attempt = 0; attempt < kLayoutTries; ++attempt) {
      schedule::Schedule s(compute_.outputs, compute_.hardware);
      DecisionTape tape = DecisionTape::sample(rng);
      try {
        apply_sketch_to(sketch, s, tape);
      } catch (const std::exception&) {
        continue;
      }
      if (sketch.is_template && !offers_choice(tape.specs())) break;  // the default's schedule alone
      if (sketch.is_template) template_sketch_ = static_cast<int>(sketches_.size());
      sketches_.push_back(std::move(sketch));
      layouts_.push_back(tape.specs());
      break;
    }
  }
}

Candidate SearchSpace::sample(std::mt19937_64& rng) const {
  if (sketches_.size() == 1) return default_candidate();
  int sketch = 1 + static_cast<int>(std::uniform_int_distribution<size_t>(0, sketches_.size() - 2)(rng));
  Candidate c{sketch, {}};
  for (const auto& spec : layout(sketch)) {
    std::vector<int64_t> v = sample_decision(spec, rng);
    c.decisions.insert(c.decisions.end(), v.begin(), v.end());
  }
  return c;
}

std::vector<Candidate> SearchSpace::template_candidates(size_t limit) const {
  if (template_sketch_ < 0) return {};
  const auto& specs = layout(template_sketch_);
  size_t total = 1;
  for (const auto& spec : specs) {
    total *= spec.options.size();
    if (total > limit + 1) return {};
  }
  // Each candidate as option indices, counted like a mixed-radix number; 0 is the template's own.
  std::vector<std::pair<int, Candidate>> by_changes;
  for (size_t n = 1; n < total; ++n) {
    Candidate c{template_sketch_, {}};
    int changed = 0;
    for (size_t i = 0, rest = n; i < specs.size(); ++i) {
      size_t k = rest % specs[i].options.size();
      rest /= specs[i].options.size();
      changed += k != 0;
      c.decisions.push_back(specs[i].options[k]);
    }
    by_changes.emplace_back(changed, std::move(c));
  }
  std::stable_sort(by_changes.begin(), by_changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Candidate> out;
  for (auto& [changed, c] : by_changes) out.push_back(std::move(c));
  return out;
}

Candidate SearchSpace::mutate(const Candidate& c, std::mt19937_64& rng) const {
  const auto& specs = layout(c.sketch);
  if (specs.empty()) return c;
  Candidate out = c;
  size_t group = std::uniform_int_distribution<size_t>(0, specs.size() - 1)(rng);
  size_t offset = 0;
  for (size_t g = 0; g < group; ++g) offset += specs[g].slots();
  const auto& spec = specs[group];
  std::vector<int64_t> current(c.decisions.begin() + offset, c.decisions.begin() + offset + spec.slots());
  std::vector<int64_t> next = mutate_decision(spec, current, rng);
  std::copy(next.begin(), next.end(), out.decisions.begin() + offset);
  return out;
}

Candidate SearchSpace::crossover(const Candidate& a, const Candidate& b, std::mt19937_64& rng) const {
  if (a.sketch != b.sketch) fail("crossover of candidates of different sketches (", a.sketch, " and ", b.sketch, ")");
  Candidate out = a;
  size_t offset = 0;
  for (const auto& spec : layout(a.sketch)) {
    if (std::uniform_int_distribution<int>(0, 1)(rng))
      std::copy(b.decisions.begin() + offset, b.decisions.begin() + offset + spec.slots(),
                out.decisions.begin() + offset);
    offset += spec.slots();
  }
  return out;
}

std::unique_ptr<schedule::Schedule> SearchSpace::apply(const Candidate& c) const {
  if (c.sketch < 0 || c.sketch >= static_cast<int>(sketches_.size())) fail("schedule candidate: no sketch ", c.sketch);
  auto s = std::make_unique<schedule::Schedule>(compute_.outputs, compute_.hardware);
  if (sketches_[c.sketch].is_default) {
    if (!c.decisions.empty()) fail("schedule candidate: the default schedule takes no decisions");
    default_trace_.apply(*s);
    return s;
  }
  DecisionTape tape = DecisionTape::replay(c.decisions);
  apply_sketch_to(sketches_[c.sketch], *s, tape);
  if (!tape.consumed()) fail("schedule candidate: more decisions than sketch '", sketches_[c.sketch].name, "' takes");
  return s;
}

std::unique_ptr<schedule::Schedule> SearchSpace::replay(const std::string& trace_json) const {
  auto s = std::make_unique<schedule::Schedule>(compute_.outputs, compute_.hardware);
  schedule::Trace::from_json(trace_json).apply(*s);
  return s;
}

void SearchSpace::apply_sketch_to(const Sketch& sketch, schedule::Schedule& s, DecisionTape& tape) const {
  if (!sketch.is_template) return apply_sketch(sketch, s, tape);
  TapeKnobs knobs(tape);
  if (compute_.hardware.is_gpu()) return schedule::apply_gpu_templates(s, knobs);
  schedule::apply_cpu_templates(s, compute_.outputs, compute_.anchor, knobs);
}

tensor_ir::LoweredFunc SearchSpace::lower(schedule::Schedule& s, const std::string& name) const {
  std::vector<tensor_ir::Tensor> args = compute_.inputs;
  args.insert(args.end(), compute_.outputs.begin(), compute_.outputs.end());
  if (!compute_.hardware.is_gpu()) return schedule::lower(s, args, name);
  const schedule::GpuParams& gpu = compute_.hardware.gpu;
  tensor_ir::LoweredFunc f = schedule::lower_for_device(s, args, name, gpu.warp_size);
  tensor_ir::verify_device_program(tensor_ir::split_host_device(f),
                                   {gpu.max_threads_per_block, gpu.max_shared_memory_bytes});
  return f;
}

std::optional<Candidate> SearchSpace::candidate(const SketchDecisions& stored) const {
  for (size_t i = 0; i < sketches_.size(); ++i)
    if (sketches_[i].name == stored.sketch) return Candidate{static_cast<int>(i), stored.values};
  return std::nullopt;
}

}  // namespace tessera::autotune
