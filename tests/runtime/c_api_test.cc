// The C API: status codes and messages, and a module run through it.
#include <gtest/gtest.h>

#include <string>

#include "runtime/tessera_runtime.hpp"
#include "tests/runtime/test_module.h"

namespace tessera::runtime {
namespace {

using namespace testing;

TEST(CApi, LoadsDescribesAndRunsAModule) {
  TesseraModule* m = nullptr;
  ASSERT_EQ(tessera_module_load(write_add4_module("capi.so").c_str(), &m), TESSERA_OK) << tessera_last_error();
  int32_t n = 0;
  ASSERT_EQ(tessera_module_num_inputs(m, &n), TESSERA_OK);
  EXPECT_EQ(n, 1);
  TesseraTensorInfo info;
  ASSERT_EQ(tessera_module_input_info(m, 0, &info), TESSERA_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, TESSERA_FLOAT32);
  ASSERT_EQ(info.ndim, 1);
  EXPECT_EQ(info.shape[0], 4);
  EXPECT_EQ(info.nbytes, 16u);
  EXPECT_STREQ(tessera_module_target(m), "test");

  float x[4] = {1, 2, 3, 4};  // not necessarily 64-byte aligned: copied either way
  int64_t shape[1] = {4};
  TesseraTensor t = {x, TESSERA_FLOAT32, 1, shape};
  ASSERT_EQ(tessera_module_set_input(m, 0, &t, TESSERA_COPY), TESSERA_OK) << tessera_last_error();
  x[0] = 100;  // a copy does not see later changes
  ASSERT_EQ(tessera_module_run(m), TESSERA_OK) << tessera_last_error();
  float y[4];
  ASSERT_EQ(tessera_module_copy_output(m, 0, y, sizeof y), TESSERA_OK);
  EXPECT_EQ(y[0], 11.0f);
  EXPECT_EQ(y[3], 44.0f);
  tessera_module_free(m);
}

TEST(CApi, FailuresReturnAStatusAndNameTheProblem) {
  TesseraModule* m = nullptr;
  EXPECT_EQ(tessera_module_load(TESSERA_TEST_KERNELS, &m), TESSERA_ERROR_LOAD);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(tessera_last_error()).find("not a Tessera module"), std::string::npos);
  EXPECT_EQ(tessera_module_load(nullptr, &m), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tessera_last_error(), "the path is NULL");

  ASSERT_EQ(tessera_module_load(write_add4_module("capi-errors.so").c_str(), &m), TESSERA_OK);
  EXPECT_EQ(tessera_module_run(m), TESSERA_ERROR_RUN);
  EXPECT_STREQ(tessera_last_error(), "input 'x' is not set");
  float x[5] = {};
  int64_t shape[1] = {5};
  TesseraTensor t = {x, TESSERA_FLOAT32, 1, shape};
  EXPECT_EQ(tessera_module_set_input(m, 0, &t, TESSERA_BORROW), TESSERA_ERROR_INPUT_MISMATCH);
  EXPECT_STREQ(tessera_last_error(), "input 'x': expected shape (4,), got (5,)");
  t.dtype = TESSERA_INT32;
  shape[0] = 4;
  EXPECT_EQ(tessera_module_set_input(m, 0, &t, TESSERA_COPY), TESSERA_ERROR_INPUT_MISMATCH);
  EXPECT_STREQ(tessera_last_error(), "input 'x': expected dtype float32, got int32");
  int32_t index = 0;
  EXPECT_EQ(tessera_module_input_index(m, "z", &index), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tessera_last_error(), "the model has no input 'z' (its inputs are: x)");
  TesseraTensorInfo info;
  EXPECT_EQ(tessera_module_output_info(m, 3, &info), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tessera_last_error(), "output index 3 is out of range (the module has 1)");
  tessera_module_free(m);
}

TEST(CApi, CppWrapperThrowsWithTheStatus) {
  tessera::rt::Module m(write_add4_module("cpp.so"));
  EXPECT_EQ(m.input(0).name, "x");
  EXPECT_EQ(m.output(0).shape, std::vector<int64_t>{4});
  alignas(64) float x[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  m.set_input("x", TesseraTensor{x, TESSERA_FLOAT32, 1, shape}, TESSERA_BORROW);
  m.run();
  EXPECT_EQ(m.output<float>(0), (std::vector<float>{10, 20, 30, 40}));
  try {
    tessera::rt::Module missing(temp_path("no-such.so"));
    FAIL();
  } catch (const tessera::rt::Error& e) {
    EXPECT_EQ(e.status(), TESSERA_ERROR_LOAD);
    EXPECT_NE(std::string(e.what()).find("cannot open module"), std::string::npos);
  }
}

TEST(CApi, ReadsAndWritesNpy) {
  std::string path = temp_path("a.npy");
  int64_t shape[2] = {2, 3};
  float data[6] = {1, 2, 3, 4, 5, 6};
  TesseraTensor t = {data, TESSERA_FLOAT32, 2, shape};
  ASSERT_EQ(tessera_npy_save(path.c_str(), &t), TESSERA_OK) << tessera_last_error();
  tessera::rt::Array a = tessera::rt::Array::load_npy(path);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data<float>()[5], 6.0f);
  TesseraArray* missing = nullptr;
  EXPECT_EQ(tessera_npy_load(temp_path("none.npy").c_str(), &missing), TESSERA_ERROR_IO);
}

}  // namespace
}  // namespace tessera::runtime
