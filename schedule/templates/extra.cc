// CPU templates of the extra family's compute definitions, by tag.
#include "schedule/templates/cpu.h"

namespace tessera::schedule {

void add_extra_templates(std::map<std::string, CpuTemplate>& t) {}

}  // namespace tessera::schedule
