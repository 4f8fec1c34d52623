// `tessera db import`: a JSON-lines export imported into a fresh tuning database, which must
// then export again. A rejected file must leave the database as it was (empty).
#include <filesystem>

#include "autotune/database.h"
#include "fuzz_input.h"
#include "temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::filesystem::path path = testing::test_temp_dir() / "import.db";
  {
    autotune::TuningDatabase db(path.string());
    try {
      db.import_jsonl(fuzz::as_string(data, size));
    } catch (const Error&) {
      if (!db.export_jsonl().empty()) fuzz::finding("a rejected import left entries behind:\n" + db.export_jsonl());
    }
    db.export_jsonl();
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  return 0;
}
