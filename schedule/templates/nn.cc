// CPU templates of the nn family's compute definitions, by tag.
#include "schedule/templates/cpu.h"

namespace tessera::schedule {

void add_nn_templates(std::map<std::string, CpuTemplate>& t) {}

}  // namespace tessera::schedule
