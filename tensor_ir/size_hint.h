// Sizes that choices are made from. Compute definitions pick tile shapes and schedules pick
// tiles, unrolling and thresholds from extents; a symbolic extent (a batch or sequence length a
// kernel takes at run time) is taken at a representative value for those choices: the hints in
// scope for the build (a dynamic library's first sizes, or a model's representative ones), else
// kDefaultSizeHint for each variable (and for a hint of 0). Only choices read them: the code is
// correct at any size.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "tensor_ir/expr.h"

namespace tessera::tensor_ir {

inline constexpr int64_t kDefaultSizeHint = 16;

// Sets the hints (dimension variable name -> value) of this thread while it lives.
class SizeHintScope {
 public:
  explicit SizeHintScope(std::map<std::string, int64_t> hints);
  ~SizeHintScope();
  SizeHintScope(const SizeHintScope&) = delete;
  SizeHintScope& operator=(const SizeHintScope&) = delete;

 private:
  std::map<std::string, int64_t> hints_;
  const std::map<std::string, int64_t>* previous_;
};

// `extent`'s value, its variables at their hints (a constant's own value).
int64_t size_hint(const Expr& extent);
// The same for choosing a tile of the extent: kDefaultSizeHint where the hints leave it empty or
// negative (a sequence a model shortens past the hinted length), which says nothing of its sizes.
int64_t tile_size_hint(const Expr& extent);
// The hint of the dimension variable `name`.
int64_t size_hint(const std::string& name);

}  // namespace tessera::tensor_ir
