#include "runtime/dlpack.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "runtime/device_api.h"
#include "runtime/error.h"

namespace tessera::runtime {
namespace {

// A producer's tensor over `data` that counts how often its deleter runs.
struct Produced {
  std::vector<float> data;
  std::vector<int64_t> shape, strides;
  int deleted = 0;
  DLManagedTensorVersioned managed{};

  Produced(std::vector<float> values, std::vector<int64_t> shape_, std::vector<int64_t> strides_, uint64_t flags = 0)
      : data(std::move(values)), shape(std::move(shape_)), strides(std::move(strides_)) {
    managed.version = {kDLPackMajorVersion, kDLPackMinorVersion};
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensorVersioned* self) { ++static_cast<Produced*>(self->manager_ctx)->deleted; };
    managed.flags = flags;
    managed.dl_tensor = {data.data(),
                         {kDLCPU, 0},
                         static_cast<int32_t>(shape.size()),
                         {kDLFloat, 32, 1},
                         shape.data(),
                         strides.empty() ? nullptr : strides.data(),
                         0};
  }
};

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

std::vector<float> values(const NDArray& a) { return {a.data_as<float>(), a.data_as<float>() + a.numel()}; }

TEST(DLPack, CompactTensorIsSharedUntilTheLastArrayGoes) {
  Produced p(iota(6), {2, 3}, {3, 1});
  {
    NDArray a = from_dlpack(&p.managed);
    EXPECT_EQ(a.data(), p.data.data());
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
    NDArray b = a;
    a = NDArray();
    EXPECT_EQ(p.deleted, 0);
  }
  EXPECT_EQ(p.deleted, 1);
}

TEST(DLPack, StridedTensorsAreCopiedInRowMajorOrder) {
  // The transpose of a 2x3 matrix, and its rows reversed (negative strides).
  Produced t(iota(6), {3, 2}, {1, 3});
  NDArray a = from_dlpack(&t.managed);
  EXPECT_EQ(t.deleted, 1);
  EXPECT_EQ(values(a), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(a.is_aligned());
  Produced r(iota(6), {2, 3}, {-3, 1});
  r.managed.dl_tensor.byte_offset = 3 * sizeof(float);
  EXPECT_EQ(values(from_dlpack(&r.managed)), (std::vector<float>{3, 4, 5, 0, 1, 2}));
  // Broadcast: a zero stride repeats the row.
  Produced b(iota(3), {2, 3}, {0, 1});
  EXPECT_EQ(values(from_dlpack(&b.managed)), (std::vector<float>{0, 1, 2, 0, 1, 2}));
}

TEST(DLPack, CopyingBackWritesThroughStrides) {
  Produced t(std::vector<float>(6, 0), {3, 2}, {1, 3});
  std::vector<float> compact = iota(6);
  dlpack_copy_from_compact(compact.data(), t.managed.dl_tensor);
  EXPECT_EQ(t.data, (std::vector<float>{0, 2, 4, 1, 3, 5}));
}

TEST(DLPack, ReadOnlyTensorsAreCopied) {
  Produced p(iota(4), {4}, {}, kDLPackFlagReadOnly);
  NDArray a = from_dlpack(&p.managed);
  EXPECT_NE(a.data(), p.data.data());
  EXPECT_EQ(p.deleted, 1);
}

TEST(DLPack, BFloat16IsTaken) {
  Produced p(iota(4), {8}, {});
  p.managed.dl_tensor.dtype = {kDLBfloat, 16, 1};
  NDArray a = from_dlpack(&p.managed);
  EXPECT_EQ(a.dtype(), kBFloat16);
  DLManagedTensor* exported = to_dlpack(a);
  EXPECT_EQ(exported->dl_tensor.dtype.code, kDLBfloat);
  exported->deleter(exported);
}

TEST(DLPack, RefusalsNameWhatTheyFoundAndStillRunTheDeleter) {
  auto expect_error = [](Produced& p, const std::string& text) {
    try {
      from_dlpack(&p.managed);
      ADD_FAILURE() << "no error; expected " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
    EXPECT_EQ(p.deleted, 1);
  };
  Produced gpu(iota(4), {4}, {});
  gpu.managed.dl_tensor.device = {kDLCUDA, 1};
  expect_error(gpu, "on cuda:1");
  Produced opencl(iota(4), {4}, {});
  opencl.managed.dl_tensor.device = {kDLOpenCL, 0};
  expect_error(opencl, "the array is on opencl:0; Tessera takes DLPack arrays in CPU or CUDA memory");
  if (!DeviceAPI::exists({DeviceType::CUDA, 0})) {
    Produced cuda(iota(4), {4}, {});
    cuda.managed.dl_tensor.device = {kDLCUDA, 0};
    expect_error(cuda, "the array is on cuda:0: ");  // followed by what is missing: the driver, the device
  }
  Produced complex(iota(4), {4}, {});
  complex.managed.dl_tensor.dtype = {5 /* kDLComplex */, 64, 1};
  expect_error(complex, "element type complex64 has no Tessera counterpart");
  Produced future(iota(4), {4}, {});
  future.managed.version = {2, 0};
  expect_error(future, "DLPack 2.0");
}

TEST(DLPack, ExportKeepsTheArrayAlive) {
  NDArray a = NDArray::empty({2, 3}, DataType::Bool());
  DLManagedTensorVersioned* m = to_dlpack_versioned(a);
  void* data = a.data();
  a = NDArray();
  EXPECT_EQ(m->dl_tensor.data, data);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLBool);
  EXPECT_EQ(m->dl_tensor.dtype.bits, 8);
  EXPECT_EQ(std::vector<int64_t>(m->dl_tensor.strides, m->dl_tensor.strides + 2), (std::vector<int64_t>{3, 1}));
  // Reading it back shares the memory.
  NDArray back = from_dlpack(m);
  EXPECT_EQ(back.data(), data);
  EXPECT_EQ(back.dtype(), DataType::Bool());
  // TVM's bool is uint1, a byte per element as well.
  EXPECT_EQ(dlpack_data_type(DLTensor{nullptr, {kDLCPU, 0}, 0, {kDLUInt, 1, 1}, nullptr, nullptr, 0}),
            DataType::Bool());
}

TEST(DLPack, OpenCLBuffersAreNotExported) {
  NDArray a = NDArray::empty({2}, kFloat32, {DeviceType::OpenCL, 0});
  try {
    to_dlpack(a);
    ADD_FAILURE() << "exported an OpenCL buffer";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "DLPack export: the array is on opencl(0), whose buffers are no address a "
              "consumer could read: copy it to the CPU first (copy_to)");
  }
}

TEST(DLPack, CUDAArraysAreSharedWhereADriverIsFound) {
  const Device cuda{DeviceType::CUDA, 0};
  if (!DeviceAPI::exists(cuda)) GTEST_SKIP() << "no CUDA device";
  NDArray a = NDArray::empty({3}, kFloat32, cuda);
  DLManagedTensorVersioned* m = to_dlpack_versioned(a);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
  NDArray b = from_dlpack(m);
  EXPECT_EQ(b.device(), cuda);
  EXPECT_EQ(b.device_data(), a.device_data());
}

}  // namespace
}  // namespace tessera::runtime
