// One element of an array, of any numeric element type (float16 and bool included), read as a
// double or written from one: what importers and checkers need to look at a few values
// without a loop per type.
#pragma once
#include <cstdint>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// Element i (row-major) of a CPU array; a bool reads as 0 or 1.
double element_as_double(const NDArray& a, int64_t i);
// Stores `value` into element i, converted to the array's element type (a bool stores value != 0).
void store_element(const NDArray& a, int64_t i, double value);

// Element i of a signed integer array, exactly (int64's too, which a double would round).
int64_t signed_value(const NDArray& x, int64_t i);
// Element i of an unsigned integer or bool array, exactly (a bool is 0 or 1).
uint64_t unsigned_value(const NDArray& x, int64_t i);
// Element i of an integer or bool array as int64, exactly; a 64-bit unsigned one by its bits.
int64_t integer_value(const NDArray& x, int64_t i);

// A CPU array's elements converted to `dtype` through double (exact but for 64-bit integers past
// 2^53); `a` itself when it already is of that type.
NDArray converted(const NDArray& a, DataType dtype);

}  // namespace tessera::runtime
