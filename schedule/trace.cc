#include "schedule/trace.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "schedule/primitive.h"
#include "schedule/schedule.h"

namespace tessera::schedule {

using nlohmann::json;

int64_t Instruction::int_attr(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end() || !std::holds_alternative<int64_t>(it->second))
    fail("trace instruction ", kind, " on ", stage, ": missing integer attribute '", key, "'");
  return std::get<int64_t>(it->second);
}

const std::string& Instruction::str_attr(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end() || !std::holds_alternative<std::string>(it->second))
    fail("trace instruction ", kind, " on ", stage, ": missing string attribute '", key, "'");
  return std::get<std::string>(it->second);
}

const std::vector<std::string>& Instruction::list_attr(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end() || !std::holds_alternative<std::vector<std::string>>(it->second))
    fail("trace instruction ", kind, " on ", stage, ": missing list attribute '", key, "'");
  return std::get<std::vector<std::string>>(it->second);
}

bool Instruction::operator==(const Instruction& o) const {
  return kind == o.kind && stage == o.stage && loops == o.loops && attrs == o.attrs && outputs == o.outputs;
}

namespace {

json attrs_to_json(const std::map<std::string, AttrValue>& attrs) {
  json j = json::object();
  for (const auto& [k, v] : attrs)
    std::visit([&, key = k](const auto& x) { j[key] = x; }, v);  // C++17 captures no binding
  return j;
}

// The instruction's fields as they are; the table checks them against its primitive's schema.
Instruction instruction_from_json(const json& j) {
  if (!j.is_object()) fail("expected an object, got ", j.dump());
  Instruction inst;
  inst.kind = j.at("kind").get<std::string>();
  inst.stage = j.at("stage").get<std::string>();
  if (j.contains("loops")) inst.loops = j["loops"].get<std::vector<std::string>>();
  if (j.contains("outputs")) inst.outputs = j["outputs"].get<std::vector<std::string>>();
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) fail(inst.kind, " on stage ", inst.stage, ": attrs is not an object");
    for (const auto& [k, v] : j["attrs"].items()) {
      if (v.is_number_integer()) inst.attrs[k] = v.get<int64_t>();
      else if (v.is_string()) inst.attrs[k] = v.get<std::string>();
      else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); }))
        inst.attrs[k] = v.get<std::vector<std::string>>();
      else fail(inst.kind, " on stage ", inst.stage, ": attribute '", k, "' has an unsupported type (", v.dump(), ")");
    }
  }
  return inst;
}

}  // namespace

void Trace::append(Instruction inst) {
  primitive(inst.kind).check(inst);
  instructions_.push_back(std::move(inst));
}

std::string Trace::to_json() const {
  json list = json::array();
  for (const auto& inst : instructions_) {
    json j = {{"kind", inst.kind}, {"stage", inst.stage}};
    if (!inst.loops.empty()) j["loops"] = inst.loops;
    if (!inst.attrs.empty()) j["attrs"] = attrs_to_json(inst.attrs);
    if (!inst.outputs.empty()) j["outputs"] = inst.outputs;
    list.push_back(std::move(j));
  }
  return list.dump();
}

Trace Trace::from_json(const std::string& text) {
  json list;
  try {
    list = json::parse(text);
  } catch (const json::exception& e) {
    fail("schedule trace: invalid JSON: ", e.what());
  }
  if (!list.is_array()) fail("schedule trace: expected a JSON array of instructions");
  Trace trace;
  for (size_t i = 0; i < list.size(); ++i) {
    try {
      trace.append(instruction_from_json(list[i]));
    } catch (const json::exception& e) {
      fail("schedule trace: malformed instruction ", i, ": ", e.what());
    } catch (const Error& e) {
      fail("schedule trace: instruction ", i, ": ", e.what());
    }
  }
  return trace;
}

std::string Trace::to_code() const {
  std::string code;
  for (const auto& inst : instructions_) code += primitive(inst.kind).to_code(inst) + "\n";
  return code;
}

void Trace::apply(Schedule& s) const {
  for (size_t i = 0; i < instructions_.size(); ++i) {
    const Instruction& inst = instructions_[i];
    const Primitive& p = primitive(inst.kind);
    try {
      std::vector<std::string> made = p.apply(s, s.stage(inst.stage), inst);
      // A replayed primitive must make what the recorded one did, so later instructions find
      // their loops and stages by the same names.
      if (made != inst.outputs)
        fail("replay made ", made.size() ? made[0] : "nothing", " where the trace recorded ",
             inst.outputs.size() ? inst.outputs[0] : "nothing");
    } catch (const Error& e) {
      fail("replaying schedule trace instruction ", i, " (", p.to_code(inst), "): ", e.what());
    }
  }
}

}  // namespace tessera::schedule
