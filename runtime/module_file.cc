#include "runtime/module_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "runtime/checksum.h"
#include "runtime/error.h"

namespace tessera::runtime {

namespace {

constexpr char kHeaderMagic[16] = {'T', 'E', 'S', 'S', 'E', 'R', 'A', '-', 'M', 'O', 'D', 'U', 'L', 'E', 0, 0};
constexpr char kTrailerMagic[8] = {'T', 'S', 'R', 'M', 'O', 'D', 'v', '1'};

struct Section {
  uint64_t offset, size, checksum;
};
struct Header {
  char magic[16];
  uint32_t version;
  uint32_t header_size;
  uint64_t file_size;
  Section code, metadata, weights;
  uint64_t checksum;  // of the bytes above
};
struct Trailer {
  uint64_t header_offset;
  uint32_t version;
  uint32_t trailer_size;
  uint64_t checksum;  // of the 16 bytes above
  char magic[8];
};
static_assert(sizeof(Header) == 112 && sizeof(Trailer) == 32, "the module format fixes these sizes");

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

uint64_t header_checksum(const Header& h) { return xxhash64(&h, offsetof(Header, checksum)); }
uint64_t trailer_checksum(const Trailer& t) { return xxhash64(&t, offsetof(Trailer, checksum)); }

// The whole file, mapped privately: constants may be used in place, and a kernel that wrote
// to one by mistake would change only this process's copy.
struct Mapping {
  void* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data) munmap(data, size);
  }
};

template <typename... Parts>
[[noreturn]] void bad(const std::string& path, const Parts&... parts) {
  fail("cannot load module '", path, "': ", parts...);
}

// Without a trailer the file is either no module at all or one cut short; a header still in
// it (valid by its own checksum) tells the two apart and how much is missing.
[[noreturn]] void no_trailer(const std::string& path, const char* bytes, size_t size) {
  for (const char* p = bytes; size >= sizeof(Header);) {
    p = static_cast<const char*>(memmem(p, size - (p - bytes), kHeaderMagic, sizeof kHeaderMagic));
    if (!p || static_cast<size_t>(bytes + size - p) < sizeof(Header)) break;
    Header h;
    std::memcpy(&h, p, sizeof h);
    if (header_checksum(h) == h.checksum && h.file_size != size)
      bad(path, "the file is truncated or was altered: its header gives ", h.file_size, " bytes, the file has ", size);
    ++p;
  }
  bad(path, "not a Tessera module (no Tessera trailer at its end; export one with lib.export() or tessera compile -o)");
}

void check_section(const std::string& path, const char* what, const Section& s, const char* bytes, uint64_t limit) {
  if (s.offset > limit || s.size > limit - s.offset)
    bad(path, "corrupt: the ", what, " section (", s.size, " bytes at ", s.offset, ") lies outside the file");
  uint64_t sum = xxhash64(bytes + s.offset, s.size);
  if (sum != s.checksum) bad(path, "corrupt: the ", what, " section fails its checksum");
}

uint16_t check_elf(const std::string& path, const char* code, uint64_t size) {
  if (size < 64 ||
      std::memcmp(code,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      code[4] != 2 || code[5] != 1)
    bad(path, "corrupt: its code is not a 64-bit little-endian ELF object");
  uint16_t type, machine;
  std::memcpy(&type, code + 16, 2);
  std::memcpy(&machine, code + 18, 2);
  if (type != 3) bad(path, "corrupt: its code is not a shared object (ELF type ", type, ")");
  return machine;
}

}  // namespace

void write_module_file(const std::string& path, const std::string& code, const ModuleMetadata& metadata,
                       uint32_t version) {
  if (version < 1 || version > kModuleFormatVersion) fail("cannot write module format version ", version);
  const std::string meta = encode_metadata(metadata, version);
  const WeightsLayout layout = weights_layout(metadata);
  std::string weights(layout.bytes, '\0');
  const std::vector<const GraphPlan*> plans = plans_of(metadata);
  for (size_t p = 0; p < plans.size(); ++p)
    for (size_t i = 0; i < plans[p]->constants.size(); ++i) {
      const NDArray& c = plans[p]->constants[i];
      if (c.nbytes() > 0) std::memcpy(weights.data() + layout.offsets[p][i], c.data(), c.nbytes());
    }

  Header h{};
  std::memcpy(h.magic, kHeaderMagic, sizeof h.magic);
  h.version = version;
  h.header_size = sizeof(Header);
  const uint64_t header_offset = align64(code.size());
  h.code = {0, code.size(), xxhash64(code.data(), code.size())};
  h.metadata = {align64(header_offset + sizeof(Header)), meta.size(), xxhash64(meta.data(), meta.size())};
  h.weights = {align64(h.metadata.offset + meta.size()), weights.size(), xxhash64(weights.data(), weights.size())};
  h.file_size = h.weights.offset + weights.size() + sizeof(Trailer);
  h.checksum = header_checksum(h);
  Trailer t{header_offset, version, sizeof(Trailer), 0, {}};
  std::memcpy(t.magic, kTrailerMagic, sizeof t.magic);
  t.checksum = trailer_checksum(t);

  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot write '", tmp, "'");
    uint64_t at = 0;
    auto put = [&](uint64_t offset, const void* data, size_t n) {
      static const char zeros[64] = {};
      out.write(zeros, static_cast<std::streamsize>(offset - at));
      out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
      at = offset + n;
    };
    put(0, code.data(), code.size());
    put(header_offset, &h, sizeof h);
    put(h.metadata.offset, meta.data(), meta.size());
    put(h.weights.offset, weights.data(), weights.size());
    put(at, &t, sizeof t);
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail("error writing '", tmp, "' (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("cannot rename '", tmp, "' to '", path, "': ", std::strerror(errno));
  }
}

ModuleFile read_module_file(const std::string& path) {
  ModuleFile f;
  f.path = path;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open module '", path, "': ", std::strerror(errno));
  f.fd = std::shared_ptr<int>(new int(fd), [](int* p) {
    close(*p);
    delete p;
  });
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) bad(path, "not a regular file");
  f.file_size = static_cast<uint64_t>(st.st_size);
  if (f.file_size == 0) bad(path, "the file is empty");
  auto mapping = std::make_shared<Mapping>();
  mapping->data = mmap(nullptr, f.file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (mapping->data == MAP_FAILED) {
    mapping->data = nullptr;
    bad(path, "cannot map it: ", std::strerror(errno));
  }
  mapping->size = f.file_size;
  char* bytes = static_cast<char*>(mapping->data);
  const uint64_t size = f.file_size;

  Trailer t{};
  if (size >= sizeof t) std::memcpy(&t, bytes + size - sizeof t, sizeof t);
  if (size < sizeof t || std::memcmp(t.magic, kTrailerMagic, sizeof t.magic) != 0) no_trailer(path, bytes, size);
  // The version first: a newer format may lay out everything after it differently.
  if (t.version > kModuleFormatVersion)
    bad(path, "it was written by a newer Tessera (module format version ", t.version, "; this runtime reads version ",
        kModuleFormatVersion, " and older)");
  if (t.version == 0 || t.trailer_size != sizeof t || trailer_checksum(t) != t.checksum)
    bad(path, "corrupt: its trailer fails its checksum");
  f.format_version = t.version;

  Header h{};
  if (t.header_offset > size - sizeof t || size - sizeof t - t.header_offset < sizeof h)
    bad(path, "corrupt: its header lies outside the file");
  std::memcpy(&h, bytes + t.header_offset, sizeof h);
  if (std::memcmp(h.magic, kHeaderMagic, sizeof h.magic) != 0 || header_checksum(h) != h.checksum)
    bad(path, "corrupt: its header fails its checksum");
  if (h.version != t.version || h.header_size != sizeof h) bad(path, "corrupt: its header and trailer disagree");
  if (h.file_size != size)
    bad(path, "the file was altered: its header gives ", h.file_size, " bytes, the file has ", size);
  check_section(path, "code", h.code, bytes, t.header_offset);
  check_section(path, "metadata", h.metadata, bytes, size - sizeof t);
  check_section(path, "weights", h.weights, bytes, size - sizeof t);
  // A device module has no host code (format version 2 on).
  if (h.code.size > 0 || t.version < 2) f.elf_machine = check_elf(path, bytes, h.code.size);
  try {
    f.metadata = decode_metadata(bytes + h.metadata.offset, h.metadata.size, t.version, bytes + h.weights.offset,
                                 h.weights.size, mapping);
  } catch (const Error& e) {
    bad(path, e.what());
  }
  const bool device_code = !f.metadata.device_programs.empty();
  if (device_code == (h.code.size > 0) || (device_code && !f.metadata.kernels.empty()))
    bad(path, "corrupt: it holds ", h.code.size, " bytes of host code, ", f.metadata.kernels.size(), " CPU kernels and ",
        f.metadata.device_programs.size(), " device programs (a module has CPU kernels in host code, or device "
        "programs and no host code)");
  return f;
}

bool is_module_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const std::streamoff size = in.tellg();
  char start[4] = {}, end[sizeof kTrailerMagic] = {};
  in.seekg(0);
  in.read(start, std::min<std::streamoff>(size, sizeof start));
  if (size >= static_cast<std::streamoff>(sizeof end)) {
    in.seekg(-static_cast<std::streamoff>(sizeof end), std::ios::end);
    in.read(end, sizeof end);
  }
  return std::memcmp(start, "\x7f" "ELF", 4) == 0 || std::memcmp(end, kTrailerMagic, sizeof end) == 0;
}

}  // namespace tessera::runtime
