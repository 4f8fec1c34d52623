#include "relay_ir/program.h"

#include <sstream>

namespace tessera::relay_ir {

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

void print(std::ostringstream& out, const Program& p, const std::string& name, int indent) {
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

std::string to_text(const Program& program) {
  std::ostringstream out;
  print(out, program, "program", 0);
  return out.str();
}

}  // namespace tessera::relay_ir
