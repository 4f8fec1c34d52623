#include "schedule/custom.h"

#include <map>
#include <mutex>

namespace tessera::schedule {

namespace {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, CpuTemplate>& registry() {
  static std::map<std::string, CpuTemplate> r;
  return r;
}
}  // namespace

void register_custom_schedule(const std::string& key, CpuTemplate schedule) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[key] = std::move(schedule);
}

const CpuTemplate* find_custom_schedule(const std::string& key) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(key);
  return it == registry().end() ? nullptr : &it->second;
}

std::unique_ptr<Schedule> apply_custom_schedule(const std::vector<tensor_ir::Tensor>& outputs,
                                                const std::string& workload, const std::string& description,
                                                std::string* key) {
  const std::string* found = &workload;
  const CpuTemplate* custom = find_custom_schedule(workload);
  if (!custom) custom = find_custom_schedule(*(found = &description));
  if (!custom) return nullptr;
  if (key) *key = *found;
  auto s = std::make_unique<Schedule>(outputs);
  for (const auto& o : outputs) (*custom)(*s, o);
  return s;
}

}  // namespace tessera::schedule
