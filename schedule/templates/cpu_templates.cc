// The table of CPU templates by tag. Each family file defines an add_*_templates function.
#include "schedule/templates/cpu.h"

namespace tessera::schedule {

const std::map<std::string, TunableTemplate>& cpu_templates() {
  static const std::map<std::string, TunableTemplate> table = [] {
    std::map<std::string, TunableTemplate> t;
    add_math_templates(t);
    add_nn_templates(t);
    add_transform_templates(t);
    add_extra_templates(t);
    return t;
  }();
  return table;
}

}  // namespace tessera::schedule
