// The schedule primitives, one descriptor each (in the manner of MetaSchedule's instruction
// traits): its name, the Python method it is and how that method's arguments sit in a trace
// Instruction, and how to replay it. The trace's JSON checks, its printed code and its replay all
// read this one table (primitive_table.cc), so a new primitive is one entry there and the Stage or
// Schedule method it calls.
#pragma once
#include <string>
#include <vector>

#include "schedule/trace.h"

namespace tessera::schedule {

class Stage;

enum class AttrType { Int, String, StringList };

// One argument of a primitive's Python method and the part of an Instruction that holds it.
struct Param {
  enum Source {
    OneLoop,    // the next of the instruction's loops, by name
    AllLoops,   // all its loops (a method taking *loops): `count` of them, or any number when 0
    Attr,       // attribute `attr` of type `type`
    StageAttr,  // string attribute `attr` naming a stage, printed as s["name"]
    SelfStage,  // the instruction's own stage, by name: a Schedule method's first argument
  };
  const char* name;  // the Python parameter
  Source source;
  const char* attr = nullptr;
  AttrType type = AttrType::String;
  bool keyword = false;  // printed as name=value
  // Nonzero: the attribute is optional, and exactly one of the params sharing this group is given
  // (split takes factor or nparts).
  int one_of = 0;
  size_t count = 0;  // AllLoops only
};

// The params a table entry lists. An attribute is named as its parameter unless `attr` says
// otherwise (the trace's JSON keeps the names earlier versions wrote).
Param loop_param(const char* name);
Param loops_param(size_t count = 0);  // the Python parameter *loops
Param attr_param(const char* name, AttrType type, const char* attr = nullptr);
Param keyword_param(const char* name, AttrType type, int one_of = 0);
Param stage_param(const char* name, const char* attr);
Param self_stage_param(const char* name);

// Whose method a primitive is: Stage's (s["C"].split) or Schedule's, taking the stage first
// (s.cache_read("B", ...)).
enum class MethodOf { Stage, Schedule };

struct Primitive {
  const char* name;
  MethodOf method_of;
  std::vector<Param> params;
  size_t outputs;  // how many loops or stages it makes (their names are the instruction's outputs)
  // Applies `inst` to `s` (`stage`: the instruction's) and returns the names of the loops or stages
  // it made.
  std::vector<std::string> (*apply)(Schedule& s, Stage& stage, const Instruction& inst);

  // Throws an Error naming the primitive, stage and attribute or operand when `inst` does not fit
  // this primitive's schema (an attribute missing, unknown or of the wrong type, the wrong number
  // of loops or outputs).
  void check(const Instruction& inst) const;
  // The Python call a person can read and paste into tessera.te (without a newline).
  std::string to_code(const Instruction& inst) const;
};

// Every primitive, in the order schedule.h declares them.
const std::vector<Primitive>& primitives();
// The primitive named `kind`, or an Error naming it when there is none.
const Primitive& primitive(const std::string& kind);

}  // namespace tessera::schedule
