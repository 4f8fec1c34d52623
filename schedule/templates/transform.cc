// CPU templates of the transform family's compute definitions, by tag.
#include "schedule/templates/cpu.h"

namespace tessera::schedule {

void add_transform_templates(std::map<std::string, CpuTemplate>& t) {}

}  // namespace tessera::schedule
