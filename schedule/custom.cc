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

}  // namespace tessera::schedule
