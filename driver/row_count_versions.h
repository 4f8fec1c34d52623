// A matrix product whose row count is symbolic (sequences of L tokens, a batch of N) has its
// compute and schedule chosen for the rows its size hints give: 8-row register tiles over packed
// panels at a prompt's many rows, one row at a time at a decoding step's one. Either computes
// every size, but the other kinds slowly: one row in a tile of 8 is 8 times the arithmetic, and
// 4 rows computed one at a time wait on the latency of 2 accumulator chains each; attention's
// products of L x L, hinted at a short prompt, pack panels of one vector where long sequences
// take two (half the accumulators, one load per multiply-add). So on a CPU such a kernel is
// lowered once per class of row counts, its row count's variables hinted at the class's rows
// (1, 4, 64 and 256, or the given hints in their own class), and its body chooses at each call:
// if (rows < 2) { one row } else if (rows < 8) { 4 } else if (rows < 128) { many } else { more },
// as Halide's specialize() does on a condition.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor_ir/stmt.h"
#include "tensor_ir/tensor.h"

namespace tessera::driver {

// The row count of the matrix product in the graph of `outputs` (the extent of the axis "i" of
// its stage tagged "matmul"), undefined when it has none or the rows are constant. For the
// version of one row per tile it is the rows themselves (no padding to whole tiles). A
// convolution's product (Winograd's tiles, a pointwise one's positions) has none: its rows are
// few only for images of a few pixels, and its versions would multiply a long compilation.
tensor_ir::Expr product_rows(const std::vector<tensor_ir::Tensor>& outputs);

// A class of row counts: [least, least of the next class).
struct RowCountClass {
  int64_t least;  // rows
  int64_t hint;   // the rows its version is hinted at
  std::string name;
};
const std::vector<RowCountClass>& row_count_classes();

// The class of `rows` rows.
size_t row_count_class(int64_t rows);

// The size hints (of every dimension variable of the graph of `outputs`) that give its product of
// `rows` (product_rows) the rows of class `c`: the given ones, with the row count's variables at
// the class's hint (the first at it, the others at 1).
std::map<std::string, int64_t> hints_for_class(const std::vector<tensor_ir::Tensor>& outputs,
                                               const tensor_ir::Expr& rows, size_t c);

// One kernel of the versions (the same arguments, in order): `versions[c]` runs the row counts of
// class c, or where its body is undefined (no version of its own) `versions[main]`; `rows` is
// the row count, an expression of the kernel's sizes.
tensor_ir::LoweredFunc choose_by_row_count(const std::vector<tensor_ir::LoweredFunc>& versions, size_t main,
                                           const tensor_ir::Expr& rows);

}  // namespace tessera::driver
