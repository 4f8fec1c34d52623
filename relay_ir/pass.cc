#include "relay_ir/pass.h"

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "relay_ir/printer.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

PassContext::PassContext() {
  const char* env = std::getenv("TESSERA_DUMP_IR");
  if (env && *env && std::string(env) != "1") dump_dir = env;
}

Pass infer_type_pass() {
  return {"InferType", 0, {}, [](const Module& m, PassContext&) { return infer_type(m); }};
}

Pass function_pass(std::string name, int opt_level, std::function<Expr(const Function&, PassContext&)> rewrite) {
  return {std::move(name), opt_level, {"InferType"}, [rewrite](const Module& m, PassContext& ctx) {
            Module out;
            for (const auto& [name, f] : m.functions()) out.add(name, Function(rewrite(f, ctx).as<FunctionNode>()));
            return out;
          }};
}

namespace {

bool same_functions(const Module& a, const Module& b) {
  if (a.functions().size() != b.functions().size()) return false;
  for (size_t i = 0; i < a.functions().size(); ++i)
    if (!a.functions()[i].second.same_as(b.functions()[i].second)) return false;
  return true;
}

class Runner {
 public:
  Runner(const std::vector<Pass>& passes, PassContext& ctx) : passes_(passes), ctx_(ctx) {}

  Module run(Module m) {
    for (const auto& p : passes_)
      if (enabled(p)) m = run_one(p, m);
    return infer_type(m);
  }

 private:
  bool enabled(const Pass& p) const {
    if (ctx_.required.count(p.name)) return true;
    return !ctx_.disabled.count(p.name) && p.opt_level <= ctx_.opt_level;
  }

  const Pass* find(const std::string& name) const {
    for (const auto& p : passes_)
      if (p.name == name) return &p;
    return nullptr;
  }

  Module run_one(const Pass& p, Module m) {
    for (const auto& r : p.requires_passes) {
      if (r == "InferType") {
        m = infer_type(m);
      } else if (const Pass* dep = find(r)) {
        if (!ran_.count(r)) m = run_one(*dep, m);
      } else {
        fail("pass ", p.name, " requires pass ", r, ", which is not in the sequence");
      }
    }
    auto start = std::chrono::steady_clock::now();
    Module out = p.run(m, ctx_);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    bool changed = !same_functions(m, out);
    ctx_.log.push_back({p.name, ms, changed});
    ran_.insert(p.name);
#ifndef NDEBUG
    out = infer_type(out);  // every pass must leave a well-typed module
#endif
    if (changed && !ctx_.dump_dir.empty()) {
      std::ofstream f(ctx_.dump_dir + "/" + std::to_string(ctx_.log.size()) + "." + p.name + ".relay");
      f << to_text(infer_type(out));
    }
    return out;
  }

  const std::vector<Pass>& passes_;
  PassContext& ctx_;
  std::set<std::string> ran_;
};

}  // namespace

Module run_passes(const Module& m, const std::vector<Pass>& passes, PassContext& ctx) {
  return Runner(passes, ctx).run(m);
}

}  // namespace tessera::relay_ir
