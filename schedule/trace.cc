#include "schedule/trace.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/error.h"
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

const char* kPrimitives[] = {"split", "fuse", "reorder", "vectorize", "unroll", "parallel", "pragma",
                             "compute_at", "compute_inline", "compute_root", "storage_align",
                             "cache_read", "cache_write", "rfactor", "prefetch"};

bool is_primitive(const std::string& kind) {
  for (const char* p : kPrimitives)
    if (kind == p) return true;
  return false;
}

json attrs_to_json(const std::map<std::string, AttrValue>& attrs) {
  json j = json::object();
  for (const auto& [k, v] : attrs) std::visit([&](const auto& x) { j[k] = x; }, v);
  return j;
}

std::string quoted(const std::string& s) { return json(s).dump(); }

std::string list_code(const std::vector<std::string>& names, bool quote) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + (quote ? quoted(names[i]) : names[i]);
  return out;
}

}  // namespace

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
  try {
    for (const auto& j : list) {
      Instruction inst;
      inst.kind = j.at("kind").get<std::string>();
      if (!is_primitive(inst.kind)) fail("schedule trace: unknown primitive '", inst.kind, "'");
      inst.stage = j.at("stage").get<std::string>();
      if (j.contains("loops")) inst.loops = j["loops"].get<std::vector<std::string>>();
      if (j.contains("outputs")) inst.outputs = j["outputs"].get<std::vector<std::string>>();
      if (j.contains("attrs")) {
        for (const auto& [k, v] : j["attrs"].items()) {
          if (v.is_number_integer()) inst.attrs[k] = v.get<int64_t>();
          else if (v.is_string()) inst.attrs[k] = v.get<std::string>();
          else if (v.is_array()) inst.attrs[k] = v.get<std::vector<std::string>>();
          else fail("schedule trace: attribute '", k, "' of ", inst.kind, " has an unsupported type");
        }
      }
      trace.append(std::move(inst));
    }
  } catch (const json::exception& e) {
    fail("schedule trace: malformed instruction: ", e.what());
  }
  return trace;
}

std::string Trace::to_code() const {
  std::ostringstream os;
  for (const auto& inst : instructions_) {
    std::string stage = "s[" + quoted(inst.stage) + "]";
    std::string outs = inst.outputs.empty() ? "" : list_code(inst.outputs, false) + " = ";
    std::string loops = list_code(inst.loops, true);
    for (auto& c : outs)
      if (c == '.') c = '_';
    const std::string& k = inst.kind;
    if (k == "split") {
      bool by_factor = inst.attrs.count("factor");
      os << outs << stage << ".split(" << loops << (by_factor ? ", factor=" : ", nparts=")
         << inst.int_attr(by_factor ? "factor" : "nparts") << ")";
    } else if (k == "pragma") {
      os << stage << ".pragma(" << loops << ", " << quoted(inst.str_attr("key")) << ", " << inst.int_attr("value") << ")";
    } else if (k == "compute_at") {
      os << stage << ".compute_at(s[" << quoted(inst.str_attr("target")) << "], " << loops << ")";
    } else if (k == "prefetch") {
      os << stage << ".prefetch(s[" << quoted(inst.str_attr("tensor")) << "], " << loops << ", s[" << quoted(inst.str_attr("from_stage"))
         << "], " << quoted(inst.str_attr("from")) << ", " << inst.int_attr("offset") << ")";
    } else if (k == "storage_align") {
      os << stage << ".storage_align(" << inst.int_attr("dim") << ", " << inst.int_attr("factor") << ", " << inst.int_attr("offset") << ")";
    } else if (k == "cache_read") {
      os << outs << "s.cache_read(" << quoted(inst.stage) << ", " << quoted(inst.str_attr("scope")) << ", ["
         << list_code(inst.list_attr("readers"), true) << "])";
    } else if (k == "cache_write") {
      os << outs << "s.cache_write(" << quoted(inst.stage) << ", " << quoted(inst.str_attr("scope")) << ")";
    } else if (k == "rfactor") {
      os << outs << "s.rfactor(" << quoted(inst.stage) << ", " << loops << ", factor_axis=" << inst.int_attr("factor_axis") << ")";
    } else {
      os << outs << stage << "." << k << "(" << loops << ")";
    }
    os << "\n";
  }
  return os.str();
}

void Trace::apply(Schedule& s) const {
  for (size_t i = 0; i < instructions_.size(); ++i) {
    const Instruction& inst = instructions_[i];
    try {
      Stage& st = s.stage(inst.stage);
      auto loop = [&](size_t n) {
        if (n >= inst.loops.size()) fail("missing loop operand ", n);
        return st.loop(inst.loops[n]);
      };
      // Checks that a replayed primitive made what the recorded one did, so later
      // instructions find their loops and stages by the same names.
      auto expect_outputs = [&](const std::vector<std::string>& made) {
        if (made != inst.outputs) fail("replay made ", made.size() ? made[0] : "nothing", " where the trace recorded ", inst.outputs.size() ? inst.outputs[0] : "nothing");
      };
      const std::string& k = inst.kind;
      if (k == "split") {
        auto [o, in] = inst.attrs.count("factor") ? st.split(loop(0), inst.int_attr("factor")) : st.split_nparts(loop(0), inst.int_attr("nparts"));
        expect_outputs({o->name, in->name});
      } else if (k == "fuse") {
        expect_outputs({st.fuse(loop(0), loop(1))->name});
      } else if (k == "reorder") {
        std::vector<Loop> order;
        for (size_t n = 0; n < inst.loops.size(); ++n) order.push_back(loop(n));
        st.reorder(order);
      } else if (k == "vectorize") {
        st.vectorize(loop(0));
      } else if (k == "unroll") {
        st.unroll(loop(0));
      } else if (k == "parallel") {
        st.parallel(loop(0));
      } else if (k == "pragma") {
        st.pragma(loop(0), inst.str_attr("key"), inst.int_attr("value"));
      } else if (k == "compute_at") {
        Stage& target = s.stage(inst.str_attr("target"));
        st.compute_at(target, target.loop(inst.loops.at(0)));
      } else if (k == "prefetch") {
        Stage& from = s.stage(inst.str_attr("from_stage"));
        st.prefetch(s.stage(inst.str_attr("tensor")).op(), loop(0), from, from.loop(inst.str_attr("from")), inst.int_attr("offset"));
      } else if (k == "compute_inline") {
        st.compute_inline();
      } else if (k == "compute_root") {
        st.compute_root();
      } else if (k == "storage_align") {
        st.set_storage_align(static_cast<int>(inst.int_attr("dim")), inst.int_attr("factor"), inst.int_attr("offset"));
      } else if (k == "cache_read") {
        std::vector<Tensor> readers;
        for (const auto& r : inst.list_attr("readers")) readers.push_back(s.stage(r).op());
        expect_outputs({s[s.cache_read(st.op(), inst.str_attr("scope"), readers)].name()});
      } else if (k == "cache_write") {
        expect_outputs({s[s.cache_write(st.op(), inst.str_attr("scope"))].name()});
      } else if (k == "rfactor") {
        expect_outputs({s[s.rfactor(st.op(), loop(0), static_cast<int>(inst.int_attr("factor_axis")))].name()});
      } else {
        fail("unknown primitive '", k, "'");
      }
    } catch (const Error& e) {
      Trace one;
      one.append(inst);
      std::string code = one.to_code();
      if (!code.empty() && code.back() == '\n') code.pop_back();
      fail("replaying schedule trace instruction ", i, " (", code, "): ", e.what());
    }
  }
}

}  // namespace tessera::schedule
