#include "runtime/dlpack.h"

#include <cstring>
#include <memory>
#include <vector>

#include "runtime/device_api.h"
#include "runtime/error.h"

namespace tessera::runtime {

namespace {

std::string dlpack_type_str(DLDataType t) {
  static const char* const names[] = {"int", "uint", "float", "handle", "bfloat", "complex", "bool"};
  std::string s = t.code < 7 ? names[t.code] + std::to_string(t.bits)
                             : "type code " + std::to_string(t.code) + " of " + std::to_string(t.bits) + " bits";
  return t.lanes == 1 ? s : s + "x" + std::to_string(t.lanes);
}

// Tessera's counterpart of a DLPack element type, wherever the tensor lies.
DataType element_type(DLDataType d) {
  const bool byte_sized = d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
  if (d.lanes == 1) {
    if (d.code == kDLInt && byte_sized) return DataType::Int(d.bits);
    if (d.code == kDLUInt && byte_sized) return DataType::UInt(d.bits);
    if (d.code == kDLFloat && (d.bits == 16 || d.bits == 32 || d.bits == 64)) return DataType::Float(d.bits);
    if (d.code == kDLBfloat && d.bits == 16) return runtime::kBFloat16;
    // numpy and PyTorch say bool with bits 8; TVM says uint1. Both store a byte per element.
    if ((d.code == kDLBool && d.bits == 8) || (d.code == kDLUInt && d.bits == 1)) return DataType::Bool();
  }
  fail("element type ", dlpack_type_str(d),
       " has no Tessera counterpart (Tessera has float16/32/64, int8/16/32/64, uint8/16/32/64 and bool)");
}

int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

// Walks `t`'s elements in row-major order, one innermost row at a time, copying each between
// its place in `t` and the next place in `compact`.
void copy_strided(const DLTensor& t, char* compact, bool into_compact) {
  const size_t elem = dlpack_data_type(t).element_bytes();
  const int64_t n = numel(t);
  char* base = static_cast<char*>(dlpack_data(t));
  if (n == 0) return;
  if (dlpack_is_compact(t)) {
    into_compact ? std::memcpy(compact, base, n * elem) : std::memcpy(base, compact, n * elem);
    return;
  }
  // Not compact, so strides are given and ndim >= 1.
  const int last = t.ndim - 1;
  const int64_t row = t.shape[last], step = t.strides[last];
  std::vector<int64_t> index(t.ndim, 0);
  for (int64_t done = 0; done < n; done += row) {
    int64_t offset = 0;
    for (int d = 0; d < last; ++d) offset += index[d] * t.strides[d];
    char* p = base + offset * static_cast<int64_t>(elem);
    if (step == 1) {
      into_compact ? std::memcpy(compact, p, row * elem) : std::memcpy(p, compact, row * elem);
      compact += row * elem;
    } else {
      for (int64_t j = 0; j < row; ++j, p += step * static_cast<int64_t>(elem), compact += elem)
        into_compact ? std::memcpy(compact, p, elem) : std::memcpy(p, compact, elem);
    }
    for (int d = last - 1; d >= 0 && ++index[d] == t.shape[d]; --d) index[d] = 0;
  }
}

// A CUDA tensor as a CUDA array sharing its memory (a copy on the device when read-only).
NDArray take_over_cuda(const DLTensor& t, std::shared_ptr<void> owner, bool read_only) {
  const std::string where = "the array is on " + dlpack_device_str(t.device);
  const Device device{DeviceType::CUDA, t.device.device_id};
  DataType dtype = element_type(t.dtype);
  try {
    DeviceAPI::get(device);
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
  if (!dlpack_is_compact(t)) fail(where, " with strides: Tessera takes compact (row-major) CUDA arrays only");
  NDArray view = NDArray::view(dlpack_data(t), {t.shape, t.shape + t.ndim}, dtype, std::move(owner), device);
  return read_only ? view.copy_to(device) : view;
}

template <typename Managed>
NDArray take_over(Managed* managed, bool read_only) {
  // From here on the deleter runs exactly once: when the last NDArray sharing the memory goes,
  // or when this function returns a copy or throws.
  std::shared_ptr<Managed> owner(managed, [](Managed* m) {
    if (m->deleter) m->deleter(m);
  });
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type == kDLCUDA) return take_over_cuda(t, owner, read_only);
  if (t.device.device_type != kDLCPU)
    fail("the array is on ", dlpack_device_str(t.device), "; Tessera takes DLPack arrays in CPU or CUDA memory");
  DataType dtype = dlpack_data_type(t);
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  if (dlpack_is_compact(t) && !read_only) return NDArray::view(dlpack_data(t), std::move(shape), dtype, owner);
  NDArray copy = NDArray::empty(std::move(shape), dtype);
  dlpack_copy_to_compact(t, copy.data());
  return copy;
}

// What a tensor Tessera exports owns: the array (so its storage outlives the export) and the
// shape and strides its DLTensor points to.
template <typename Managed>
struct Exported {
  Managed managed{};
  NDArray array;
  std::vector<int64_t> shape, strides;
};

template <typename Managed>
Managed* export_array(const NDArray& a) {
  if (a.device().type == DeviceType::OpenCL)
    fail("DLPack export: the array is on ", a.device().str(),
         ", whose buffers are no address a consumer could read: ", "copy it to the CPU first (copy_to)");
  auto* e = new Exported<Managed>;
  e->array = a;
  e->shape = a.shape();
  // Explicit strides: current DLPack no longer lets an exporter leave them NULL.
  e->strides = row_major_strides(a.shape());
  DLTensor& t = e->managed.dl_tensor;
  t.data = a.numel() == 0 ? nullptr : a.device_data();  // the spec's convention for empty tensors
  t.device = a.device().type == DeviceType::CUDA ? DLDevice{kDLCUDA, a.device().id} : DLDevice{kDLCPU, 0};
  t.ndim = a.ndim();
  t.dtype = to_dlpack(a.dtype());
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](Managed* self) { delete static_cast<Exported<Managed>*>(self->manager_ctx); };
  return &e->managed;
}

}  // namespace

std::string dlpack_device_str(DLDevice device) {
  std::string name;
  switch (device.device_type) {
    case kDLCPU:
      name = "cpu";
      break;
    case kDLCUDA:
      name = "cuda";
      break;
    case kDLCUDAHost:
      name = "cuda_host";
      break;
    case kDLOpenCL:
      name = "opencl";
      break;
    case kDLVulkan:
      name = "vulkan";
      break;
    case kDLMetal:
      name = "metal";
      break;
    case kDLVPI:
      name = "vpi";
      break;
    case kDLROCM:
      name = "rocm";
      break;
    case kDLROCMHost:
      name = "rocm_host";
      break;
    case kDLExtDev:
      name = "ext_dev";
      break;
    case kDLCUDAManaged:
      name = "cuda_managed";
      break;
    case kDLOneAPI:
      name = "oneapi";
      break;
    case kDLWebGPU:
      name = "webgpu";
      break;
    case kDLHexagon:
      name = "hexagon";
      break;
    case kDLMAIA:
      name = "maia";
      break;
    default:
      name = "device type " + std::to_string(device.device_type);
  }
  return name + ":" + std::to_string(device.device_id);
}

DataType dlpack_data_type(const DLTensor& t) {
  if (t.device.device_type != kDLCPU)
    fail("the array is on ", dlpack_device_str(t.device), "; Tessera takes arrays in CPU memory only for now");
  return element_type(t.dtype);
}

DLDataType to_dlpack(DataType t) {
  switch (t.code) {
    case TypeCode::Int:
      return {kDLInt, t.bits, t.lanes};
    case TypeCode::UInt:
      return {kDLUInt, t.bits, t.lanes};
    case TypeCode::Float:
      return {kDLFloat, t.bits, t.lanes};
    case TypeCode::Bool:
      return {kDLBool, 8, t.lanes};
    case TypeCode::BFloat:
      return {kDLBfloat, 16, t.lanes};
    case TypeCode::Handle:
      fail("DLPack export: ", t.str(), " is not an array element type");
    default:
      break;
  }
  fail("DLPack export: DLPack 1.0 has no code for ", t.str());
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

bool dlpack_is_compact(const DLTensor& t) {
  if (!t.strides || numel(t) == 0) return true;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    // A dimension of extent 1 is never stepped along, so its stride does not matter.
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

void dlpack_copy_to_compact(const DLTensor& t, void* compact) { copy_strided(t, static_cast<char*>(compact), true); }

void dlpack_copy_from_compact(const void* compact, const DLTensor& t) {
  copy_strided(t, static_cast<char*>(const_cast<void*>(compact)), false);
}

NDArray from_dlpack(DLManagedTensor* managed) { return take_over(managed, false); }

NDArray from_dlpack(DLManagedTensorVersioned* managed) {
  if (managed->version.major != kDLPackMajorVersion) {
    // Only version and deleter keep their places across major versions.
    DLPackVersion v = managed->version;
    if (managed->deleter) managed->deleter(managed);
    fail("a DLPack ", v.major, ".", v.minor, " tensor: Tessera reads DLPack ", kDLPackMajorVersion, ".x");
  }
  return take_over(managed, managed->flags & kDLPackFlagReadOnly);
}

DLManagedTensor* to_dlpack(const NDArray& a) { return export_array<DLManagedTensor>(a); }

DLManagedTensorVersioned* to_dlpack_versioned(const NDArray& a, uint64_t flags) {
  DLManagedTensorVersioned* m = export_array<DLManagedTensorVersioned>(a);
  m->version = {kDLPackMajorVersion, kDLPackMinorVersion};
  m->flags = flags;
  return m;
}

}  // namespace tessera::runtime
