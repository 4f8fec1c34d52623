// The module loader on arbitrary files. Checksums stop almost every mutation at the container,
// so each input is also tried resealed: with the checksums of module_file.h's layout recomputed
// for the bytes as they are, which lets mutations reach the sections' validation and the
// metadata decoder. A resealed file is read, never loaded: its code may be any ELF image, and
// the system's dynamic loader trusts what the checksums vouch for.
#include <cstring>
#include <fstream>

#include "fuzz_input.h"
#include "runtime/checksum.h"
#include "runtime/module_file.h"
#include "runtime/module_loader.h"
#include "temp_dir.h"

namespace {

using namespace tessera;

// module_file.h's header and trailer; offsets into them are fixed by the format.
constexpr size_t kTrailerSize = 32, kHeaderSize = 112;
constexpr size_t kSectionsAt = 32, kHeaderChecksumAt = 104;

uint64_t read_u64(const std::string& s, size_t at) {
  uint64_t v;
  std::memcpy(&v, s.data() + at, 8);
  return v;
}
void write_u64(std::string& s, size_t at, uint64_t v) { std::memcpy(s.data() + at, &v, 8); }

// The bytes with every checksum recomputed, where the trailer and header can be found.
std::string reseal(std::string bytes) {
  if (bytes.size() < kTrailerSize) return bytes;
  const size_t trailer = bytes.size() - kTrailerSize;
  write_u64(bytes, trailer + 16, runtime::xxhash64(bytes.data() + trailer, 16));
  const uint64_t header = read_u64(bytes, trailer);
  if (header > trailer || trailer - header < kHeaderSize) return bytes;
  for (size_t section = 0; section < 3; ++section) {
    const size_t at = header + kSectionsAt + section * 24;
    const uint64_t offset = read_u64(bytes, at), size = read_u64(bytes, at + 8);
    if (offset <= bytes.size() && size <= bytes.size() - offset)
      write_u64(bytes, at + 16, runtime::xxhash64(bytes.data() + offset, size));
  }
  write_u64(bytes, header + kHeaderChecksumAt, runtime::xxhash64(bytes.data() + header, kHeaderChecksumAt));
  return bytes;
}

std::string write_temp(const std::string& bytes) {
  const std::string path = (testing::test_temp_dir() / "input.tsm").string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = fuzz::as_string(data, size);
  fuzz::expect_only_errors([&] { runtime::load_module(write_temp(bytes)); });
  fuzz::expect_only_errors([&] { runtime::read_module_file(write_temp(reseal(bytes))); });
  return 0;
}
