// A blocked convolution (the product tagged "conv") computes a row of outputs in register tiles
// of `tile` positions, the tile chosen for the width its size hints give, the row padded to
// whole tiles. At a symbolic width the hint is one width of many: tiles of 7 for the 7x7 outputs
// of a 224x224 image pad the rows of 5 (a 160x160 image's) to 7 and those of 8 (320x240) to 14,
// 71% and 57% of the arithmetic used. So on a CPU such a kernel is also lowered at hints that
// give it tiles of kAlternativeTiles, and its body takes at each call the version that pads the
// width least (the widest tile where they tie), as Halide's specialize() does on a condition.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tensor_ir/stmt.h"
#include "tensor_ir/tensor.h"

namespace tessera::driver {

// The tiles the other versions are lowered for. Narrower tiles cost more per position (4 took a
// quarter longer than 8 over rows of 8: its 8 accumulators barely cover the multiply-adds'
// latency). With the tiles of 7 of a 224x224 image's last stage, rows of 4 to 16 outputs are
// padded by three positions at most (11 to 14), most by none or one.
inline const std::vector<int64_t> kAlternativeTiles = {8, 5};
// Wider rows have no versions: they pad at most 7 of 17 or more positions, and each version is
// one more lowering and compilation of the kernel.
constexpr int64_t kMostVersionedWidth = 16;

// The blocked convolution of the graph of `outputs`: its output width (symbolic) and the width
// its product pads it to (whole tiles). Undefined where it has none or the width is constant.
struct BlockedConvWidth {
  tensor_ir::Expr width, padded;
};
BlockedConvWidth blocked_conv_width(const std::vector<tensor_ir::Tensor>& outputs);

// Size hints (of every dimension variable of the graph of `outputs`) at which `width` is
// `target`: the given ones with the width's first variable changed; none where no value gives it.
std::optional<std::map<std::string, int64_t>> hints_for_width(const std::vector<tensor_ir::Tensor>& outputs,
                                                              const tensor_ir::Expr& width, int64_t target);

// A version of the kernel: its padded width (an expression of the kernel's sizes) and its tile.
struct WidthVersion {
  tensor_ir::LoweredFunc func;
  tensor_ir::Expr padded;
  int64_t tile;
};

// One kernel of the versions (the same arguments, in order), taking at each call the one whose
// padded width is least, the widest tile among equals.
tensor_ir::LoweredFunc choose_by_padded_width(std::vector<WidthVersion> versions);

}  // namespace tessera::driver
