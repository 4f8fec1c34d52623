#include "runtime/element.h"

#include <cstring>
#include <type_traits>

#include "runtime/half.h"
#include "runtime/narrow_types.h"

namespace tessera::runtime {

double element_as_double(const NDArray& a, int64_t i) {
  DataType t = a.dtype();
  const void* p = static_cast<const char*>(a.data()) + i * t.element_bytes();
  auto get = [p](auto tag) { return static_cast<double>(*static_cast<const decltype(tag)*>(p)); };
  if (t.is_bool()) return get(uint8_t{}) != 0;
  if (t.is_narrow_float())
    return narrow_float_value(t, t.bits == 16 ? *static_cast<const uint16_t*>(p) : *static_cast<const uint8_t*>(p));
  if (t.is_narrow()) return narrow_int_value(t, *static_cast<const uint8_t*>(p));
  if (t.is_float())
    return t.bits == 16 ? half_to_float(*static_cast<const uint16_t*>(p)) : t.bits == 32 ? get(float{}) : get(double{});
  switch (t.bits) {
    case 8:
      return t.is_int() ? get(int8_t{}) : get(uint8_t{});
    case 16:
      return t.is_int() ? get(int16_t{}) : get(uint16_t{});
    case 32:
      return t.is_int() ? get(int32_t{}) : get(uint32_t{});
    default:
      return t.is_int() ? get(int64_t{}) : get(uint64_t{});
  }
}

void store_element(const NDArray& a, int64_t i, double v) {
  DataType t = a.dtype();
  void* p = static_cast<char*>(a.data()) + i * t.element_bytes();
  auto put = [p](auto value) { std::memcpy(p, &value, sizeof(value)); };
  if (t.is_bool()) return put(static_cast<uint8_t>(v != 0));
  if (t.is_narrow_float()) {
    const uint32_t bits = narrow_float_bits(t, static_cast<float>(v));
    return t.bits == 16 ? put(static_cast<uint16_t>(bits)) : put(static_cast<uint8_t>(bits));
  }
  // An integer wraps to the type's bits, as the wider integer types do.
  if (t.is_narrow()) return put(static_cast<uint8_t>(static_cast<int64_t>(v) & ((1 << t.bits) - 1)));
  if (t.is_float())
    return t.bits == 16   ? put(float_to_half(static_cast<float>(v)))
           : t.bits == 32 ? put(static_cast<float>(v))
                          : put(v);
  switch (t.bits) {
    case 8:
      return t.is_int() ? put(static_cast<int8_t>(v)) : put(static_cast<uint8_t>(v));
    case 16:
      return t.is_int() ? put(static_cast<int16_t>(v)) : put(static_cast<uint16_t>(v));
    case 32:
      return t.is_int() ? put(static_cast<int32_t>(v)) : put(static_cast<uint32_t>(v));
    default:
      return t.is_int() ? put(static_cast<int64_t>(v)) : put(static_cast<uint64_t>(v));
  }
}

namespace {

template <typename T>
T load(const NDArray& x, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(x.data()) + i * x.dtype().element_bytes(), sizeof v);
  return v;
}

// Element i of a byte-wide or wider integer array, read as the integer of its width with the
// signedness of Wide, widened to Wide.
template <typename Wide>
Wide widened(const NDArray& x, int64_t i) {
  constexpr bool kSigned = std::is_signed_v<Wide>;
  switch (x.dtype().bits) {
    case 8:
      return load<std::conditional_t<kSigned, int8_t, uint8_t>>(x, i);
    case 16:
      return load<std::conditional_t<kSigned, int16_t, uint16_t>>(x, i);
    case 32:
      return load<std::conditional_t<kSigned, int32_t, uint32_t>>(x, i);
    default:
      return load<Wide>(x, i);
  }
}

}  // namespace

int64_t signed_value(const NDArray& x, int64_t i) {
  const DataType t = x.dtype();
  if (t.is_narrow()) return narrow_int_value(t, load<uint8_t>(x, i));
  return widened<int64_t>(x, i);
}

uint64_t unsigned_value(const NDArray& x, int64_t i) {
  const DataType t = x.dtype();
  if (t.is_bool()) return load<uint8_t>(x, i) != 0;
  if (t.is_narrow()) return narrow_int_value(t, load<uint8_t>(x, i));
  return widened<uint64_t>(x, i);
}

int64_t integer_value(const NDArray& x, int64_t i) {
  return x.dtype().is_int() ? signed_value(x, i) : static_cast<int64_t>(unsigned_value(x, i));
}

NDArray converted(const NDArray& a, DataType dtype) {
  if (a.dtype() == dtype) return a;
  NDArray out = NDArray::empty(a.shape(), dtype);
  for (int64_t i = 0; i < a.numel(); ++i) store_element(out, i, element_as_double(a, i));
  return out;
}

}  // namespace tessera::runtime
