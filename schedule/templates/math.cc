// CPU templates of the math family's compute definitions, by tag.
#include "schedule/templates/cpu.h"

namespace tessera::schedule {

void add_math_templates(std::map<std::string, CpuTemplate>& t) {}

}  // namespace tessera::schedule
