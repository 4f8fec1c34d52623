#include "schedule/primitive.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace tessera::schedule {

Param loop_param(const char* name) { return {name, Param::OneLoop}; }

Param loops_param(size_t count) {
  Param p{"loops", Param::AllLoops};
  p.count = count;
  return p;
}

Param attr_param(const char* name, AttrType type, const char* attr) {
  return {name, Param::Attr, attr ? attr : name, type};
}

Param keyword_param(const char* name, AttrType type, int one_of) {
  return {name, Param::Attr, name, type, true, one_of};
}

Param stage_param(const char* name, const char* attr) { return {name, Param::StageAttr, attr}; }

Param self_stage_param(const char* name) { return {name, Param::SelfStage}; }

namespace {

const char* type_name(AttrType type) {
  switch (type) {
    case AttrType::Int:
      return "an integer";
    case AttrType::String:
      return "a string";
    case AttrType::StringList:
      return "a list of strings";
  }
  return "?";
}

AttrType type_of(const AttrValue& v) {
  if (std::holds_alternative<int64_t>(v)) return AttrType::Int;
  if (std::holds_alternative<std::string>(v)) return AttrType::String;
  return AttrType::StringList;
}

bool has_attr(const Param& p) { return p.source == Param::Attr || p.source == Param::StageAttr; }

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

std::string attr_code(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return quoted(*s);
  std::vector<std::string> items;
  for (const auto& s : std::get<std::vector<std::string>>(v)) items.push_back(quoted(s));
  return "[" + joined(items) + "]";
}

}  // namespace

void Primitive::check(const Instruction& inst) const {
  auto where = [&] { return std::string(name) + " on stage " + inst.stage; };
  size_t loops = 0;
  bool any_loops = false;
  std::vector<std::string> known;
  std::vector<int> groups;
  for (const auto& p : params) {
    if (p.source == Param::OneLoop) ++loops;
    if (p.source == Param::AllLoops) {
      loops += p.count;
      any_loops = p.count == 0;
    }
    if (!has_attr(p)) continue;
    known.push_back(p.attr);
    AttrType type = p.source == Param::StageAttr ? AttrType::String : p.type;
    auto it = inst.attrs.find(p.attr);
    if (it == inst.attrs.end()) {
      if (!p.one_of) fail(where(), ": missing attribute '", p.attr, "' (", type_name(type), ")");
    } else if (type_of(it->second) != type) {
      fail(where(), ": attribute '", p.attr, "' is ", type_name(type_of(it->second)), ", expected ", type_name(type));
    }
    if (p.one_of && std::find(groups.begin(), groups.end(), p.one_of) == groups.end()) groups.push_back(p.one_of);
  }
  for (const auto& [key, value] : inst.attrs)
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail(where(), ": unknown attribute '", key, "' (it takes: ", known.empty() ? "none" : joined(known), ")");
  for (int group : groups) {
    std::vector<std::string> names;
    size_t given = 0;
    for (const auto& p : params)
      if (p.one_of == group) {
        names.push_back(p.attr);
        given += inst.attrs.count(p.attr);
      }
    if (given != 1) fail(where(), ": takes exactly one of the attributes ", joined(names), ", got ", given);
  }
  if (any_loops ? inst.loops.size() < loops : inst.loops.size() != loops)
    fail(where(), ": takes ", any_loops ? "at least " : "", loops, " loop(s), got ", inst.loops.size());
  if (inst.outputs.size() != outputs)
    fail(where(), ": makes ", outputs, " loop(s) or stage(s), but the instruction names ", inst.outputs.size());
}

std::string Primitive::to_code(const Instruction& inst) const {
  std::string outs = inst.outputs.empty() ? "" : joined(inst.outputs) + " = ";
  std::replace(outs.begin(), outs.end(), '.', '_');
  std::vector<std::string> args;
  size_t next_loop = 0;
  for (const auto& p : params) {
    switch (p.source) {
      case Param::OneLoop:
        args.push_back(quoted(inst.loops.at(next_loop++)));
        break;
      case Param::AllLoops:
        for (; next_loop < inst.loops.size(); ++next_loop) args.push_back(quoted(inst.loops[next_loop]));
        break;
      case Param::SelfStage:
        args.push_back(quoted(inst.stage));
        break;
      case Param::StageAttr:
        args.push_back("s[" + quoted(inst.str_attr(p.attr)) + "]");
        break;
      case Param::Attr: {
        auto it = inst.attrs.find(p.attr);
        if (it == inst.attrs.end()) break;  // an optional one not given
        args.push_back((p.keyword ? std::string(p.name) + "=" : "") + attr_code(it->second));
        break;
      }
    }
  }
  std::string receiver = method_of == MethodOf::Schedule ? "s." : "s[" + quoted(inst.stage) + "].";
  return outs + receiver + name + "(" + joined(args) + ")";
}

const Primitive& primitive(const std::string& kind) {
  for (const auto& p : primitives())
    if (kind == p.name) return p;
  std::vector<std::string> names;
  for (const auto& p : primitives()) names.push_back(p.name);
  fail("unknown schedule primitive '", kind, "' (the primitives are: ", joined(names), ")");
}

}  // namespace tessera::schedule
