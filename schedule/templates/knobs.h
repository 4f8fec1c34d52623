// A template's tunable parameters ("knobs", as AutoTVM calls them): the few choices a hand-written
// CPU template makes by rule of thumb, such as a depthwise convolution's block of rows, where its
// padded input is copied, whether a small kernel is worth the threads, or how far a matrix
// product's reduction is unrolled. A template asks for every knob it has, always in the same
// order whatever the answers, so a kernel's knobs form a fixed list of choices: DefaultKnobs
// answers each with the template's own choice; the tuner answers with sampled or replayed ones,
// which makes the templates a hand-written search space beside the rule-generated sketches
// (autotune/search_space.h, the "template" sketch).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::schedule {

class TemplateKnobs {
 public:
  virtual ~TemplateKnobs() = default;
  // One of `options` for the knob `name`; the first is the template's own choice. Later
  // duplicates are dropped first (an alternative may coincide with the template's choice).
  int64_t choose(const std::string& name, std::vector<int64_t> options);
  // A yes/no knob whose template choice is `own`.
  bool choose_flag(const std::string& name, bool own) { return choose(name, {own ? 1 : 0, own ? 0 : 1}) != 0; }

 protected:
  // Picks from distinct, non-empty options.
  virtual int64_t pick(const std::string& name, const std::vector<int64_t>& options) = 0;
};

// Every knob at the template's own choice.
class DefaultKnobs : public TemplateKnobs {
 protected:
  int64_t pick(const std::string&, const std::vector<int64_t>& options) override { return options.front(); }
};

}  // namespace tessera::schedule
