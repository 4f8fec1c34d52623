// A schedule is its trace: the list of primitives applied, each an Instruction naming its stage
// and loops by role ("C", "i.outer") and keeping its parameters (split factors, pragmas) as
// data. A trace serializes to JSON, prints as readable code, and replays on a fresh compute
// definition of the same shape to the same program; tuning records store traces, never code.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace tessera::schedule {

class Schedule;

using AttrValue = std::variant<int64_t, std::string, std::vector<std::string>>;

struct Instruction {
  std::string kind;                // the primitive (primitive.h): "split", "compute_at", ...
  std::string stage;               // the stage it applies to
  std::vector<std::string> loops;  // the loops it takes, by name
  std::map<std::string, AttrValue> attrs;
  std::vector<std::string> outputs;  // names of the loops or stages it made

  int64_t int_attr(const std::string& key) const;
  const std::string& str_attr(const std::string& key) const;
  const std::vector<std::string>& list_attr(const std::string& key) const;
  bool operator==(const Instruction& o) const;
};

class Trace {
 public:
  const std::vector<Instruction>& instructions() const { return instructions_; }
  // Throws an Error naming the primitive, stage and attribute when `inst` is not a primitive of
  // the table (primitive.h) or does not fit its schema, so a trace holds only what replays.
  void append(Instruction inst);
  size_t size() const { return instructions_.size(); }

  std::string to_json() const;
  // Throws tessera::Error on malformed JSON, an unknown primitive or an instruction that does not
  // fit its primitive's schema, naming the instruction.
  static Trace from_json(const std::string& json);
  // Python-like code a person can read (and paste into tessera.te).
  std::string to_code() const;
  // Applies every instruction to `schedule`; throws an Error naming the instruction (its index
  // and text) if a stage or loop it names does not exist or the primitive is invalid there.
  void apply(Schedule& schedule) const;

  bool operator==(const Trace& o) const { return instructions_ == o.instructions_; }

 private:
  std::vector<Instruction> instructions_;
};

}  // namespace tessera::schedule
