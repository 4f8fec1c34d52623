#include "driver/kernel_versions.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"

namespace tessera::driver {

using namespace tensor_ir;

namespace {

// A version's body reading and writing another's arguments.
class RebindArguments : public IRMutator {
 public:
  explicit RebindArguments(std::unordered_map<const BufferNode*, Buffer> to) : to_(std::move(to)) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_(const Load* op) override { return Load::make(rebound(op->buffer), mutate(op->index)); }
  Stmt mutate_(const Store* op) override {
    return Store::make(rebound(op->buffer), mutate(op->value), mutate(op->index));
  }

 private:
  Buffer rebound(const Buffer& b) const {
    auto it = to_.find(b.get());
    return it == to_.end() ? b : it->second;
  }
  std::unordered_map<const BufferNode*, Buffer> to_;
};

}  // namespace

LoweredFunc with_arguments(const LoweredFunc& version, std::vector<Buffer> args, const std::vector<size_t>& at) {
  if (at.size() != version.args.size())
    fail("internal error: kernel ", version.name, " takes ", version.args.size(), " arguments, placed at ", at.size());
  std::unordered_map<const BufferNode*, Buffer> to;
  for (size_t j = 0; j < at.size(); ++j) to[version.args[j].get()] = args.at(at[j]);
  LoweredFunc out = version;
  out.args = std::move(args);
  out.body = RebindArguments(std::move(to)).mutate(version.body);
  return out;
}

LoweredFunc with_arguments_of(const LoweredFunc& version, const LoweredFunc& like) {
  if (version.args.size() != like.args.size())
    fail("internal error: the versions of kernel ", like.name, " take ", version.args.size(), " and ", like.args.size(),
         " arguments");
  // A version already reading them (one joined before) needs no rewrite of its body.
  if (std::equal(version.args.begin(), version.args.end(), like.args.begin(),
                 [](const Buffer& a, const Buffer& b) { return a.same_as(b); }))
    return version;
  std::vector<size_t> same(like.args.size());
  std::iota(same.begin(), same.end(), size_t{0});
  return with_arguments(version, like.args, same);
}

LoweredFunc choose_by_condition(const LoweredFunc& if_true, const LoweredFunc& if_false, const Expr& condition) {
  LoweredFunc out = if_true;
  const LoweredFunc otherwise = with_arguments_of(if_false, if_true);
  out.body = IfThenElse::make(arith::simplify(condition), if_true.body, otherwise.body);
  for (const Var& x : otherwise.shape_vars)
    if (std::none_of(out.shape_vars.begin(), out.shape_vars.end(), [&](const Var& y) { return y.same_as(x); }))
      out.shape_vars.push_back(x);
  return out;
}

}  // namespace tessera::driver
