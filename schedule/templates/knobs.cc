#include "schedule/templates/knobs.h"

#include <algorithm>

#include "runtime/error.h"

namespace tessera::schedule {

int64_t TemplateKnobs::choose(const std::string& name, std::vector<int64_t> options) {
  if (options.empty()) fail("template knob '", name, "' has no options");
  std::vector<int64_t> distinct;
  for (int64_t o : options)
    if (std::find(distinct.begin(), distinct.end(), o) == distinct.end()) distinct.push_back(o);
  return pick(name, distinct);
}

}  // namespace tessera::schedule
