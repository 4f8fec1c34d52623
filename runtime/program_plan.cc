#include "runtime/program_plan.h"

#include <algorithm>
#include <sstream>

#include "runtime/error.h"

namespace tessera::runtime {

bool StepAttrs::has(const std::string& name) const {
  return std::any_of(items_.begin(), items_.end(), [&](const Item& i) { return i.name == name; });
}

const std::vector<int64_t>& StepAttrs::get_ints(const std::string& name) const {
  for (const Item& i : items_)
    if (i.name == name) return i.values;
  fail("no attribute '", name, "'");
}

int64_t StepAttrs::get_int(const std::string& name) const {
  const std::vector<int64_t>& v = get_ints(name);
  if (v.size() != 1) fail("attribute '", name, "' holds ", v.size(), " integers, not one");
  return v[0];
}

DataType StepAttrs::get_dtype(const std::string& name) const {
  const std::vector<int64_t>& v = get_ints(name);
  if (v.size() != 2) fail("attribute '", name, "' must hold a type code and a bit width, got ", v.size(), " integers");
  return DataType(static_cast<TypeCode>(v[0]), static_cast<int>(v[1]));
}

void StepAttrs::set(const std::string& name, std::vector<int64_t> values, bool scalar) {
  for (Item& i : items_)
    if (i.name == name) {
      i.values = std::move(values);
      i.scalar = scalar;
      return;
    }
  items_.push_back({name, std::move(values), scalar});
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + (n.empty() ? std::string("_") : n);
  return s;
}

const char* kind_name(ProgramStep::Kind kind) {
  switch (kind) {
    case ProgramStep::Kind::Stage:
      return "stage";
    case ProgramStep::Kind::Builtin:
      return "builtin";
    case ProgramStep::Kind::If:
      return "if";
    case ProgramStep::Kind::Loop:
      return "loop";
    case ProgramStep::Kind::Scan:
      return "scan";
    case ProgramStep::Kind::SequenceMap:
      return "sequence_map";
  }
  return "?";
}

void print(std::ostringstream& out, const ProgramPlan& p, const std::string& name, int indent) {
  const std::string pad(indent, ' ');
  out << pad << name << "(" << joined(p.inputs) << ") -> (" << joined(p.outputs) << ")\n";
  for (const ProgramStep& step : p.steps) {
    out << pad << "  " << joined(step.outputs) << " = "
        << (step.kind == ProgramStep::Kind::Builtin ? step.builtin : kind_name(step.kind)) << "(" << joined(step.inputs)
        << ")  # " << step.origin << "\n";
    static const char* kIfBodies[] = {"then", "else"};
    for (size_t b = 0; b < step.bodies.size(); ++b)
      print(out, *step.bodies[b], step.kind == ProgramStep::Kind::If ? kIfBodies[b % 2] : "body", indent + 4);
  }
}

}  // namespace

std::string to_text(const ProgramPlan& program) {
  std::ostringstream out;
  print(out, program, "program", 0);
  return out.str();
}

int count_stages(const ProgramPlan& program) {
  int n = 0;
  for (const ProgramStep& step : program.steps) {
    n = std::max(n, step.stage + 1);
    for (const auto& body : step.bodies) n = std::max(n, count_stages(*body));
  }
  return n;
}

}  // namespace tessera::runtime
