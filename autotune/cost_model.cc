#include "autotune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <limits>
#include <sstream>

#include "runtime/error.h"

namespace tessera::autotune {

namespace {

// Fewer measurements than this teach trees nothing reliable: the model stays random (a loaded
// model keeps predicting until then).
constexpr size_t kMinMeasurements = 16;
constexpr int kRounds = 80;
// Squared error weighted by the label (as Ansor does) puts the fit where the fast candidates
// are; failures keep a small weight so the model still learns to avoid them.
constexpr double kMinWeight = 0.05;

void check(int rc, const char* what) {
  if (rc != 0) fail("cost model: ", what, ": ", XGBGetLastError());
}

class Matrix {
 public:
  explicit Matrix(const std::vector<std::vector<float>>& rows) {
    size_t cols = rows.empty() ? 0 : rows[0].size();
    std::vector<float> flat;
    flat.reserve(rows.size() * cols);
    for (const auto& r : rows) {
      if (r.size() != cols) fail("cost model: feature rows of different lengths (", cols, " and ", r.size(), ")");
      flat.insert(flat.end(), r.begin(), r.end());
    }
    check(XGDMatrixCreateFromMat(flat.data(), rows.size(), cols, std::numeric_limits<float>::quiet_NaN(), &handle),
          "creating a matrix");
  }
  ~Matrix() { XGDMatrixFree(handle); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle handle = nullptr;
};

bool failed(double cost) { return !(cost > 0) || !std::isfinite(cost); }

constexpr const char* kDataHeader = "tessera-cost-model-data";
constexpr int kDataVersion = 1;

}  // namespace

CostModel::CostModel(uint64_t seed) : rng_(seed) {}

CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

size_t CostModel::num_measurements() const {
  size_t n = 0;
  for (const auto& [task, d] : data_) n += d.costs.size();
  return n;
}

void CostModel::update(const std::string& task, const std::vector<std::vector<float>>& features,
                       const std::vector<double>& costs) {
  if (features.size() != costs.size())
    fail("cost model: ", features.size(), " feature rows for ", costs.size(), " costs");
  size_t width = features.empty() ? 0 : features[0].size();
  for (const auto& [t, old] : data_) {
    if (old.features.empty() || old.features[0].size() == width || width == 0) continue;
    // Saved by a Tessera extracting other features: neither the rows nor the trees fit any more.
    data_.clear();
    if (booster_) XGBoosterFree(booster_);
    booster_ = nullptr;
    break;
  }
  TaskData& d = data_[task];
  d.features.insert(d.features.end(), features.begin(), features.end());
  d.costs.insert(d.costs.end(), costs.begin(), costs.end());
  if (num_measurements() >= kMinMeasurements) train();
}

void CostModel::train() {
  std::vector<std::vector<float>> rows;
  std::vector<float> labels, weights;
  for (const auto& [task, d] : data_) {
    double best = std::numeric_limits<double>::infinity();
    for (double c : d.costs)
      if (!failed(c)) best = std::min(best, c);
    for (size_t i = 0; i < d.costs.size(); ++i) {
      double y = failed(d.costs[i]) || !std::isfinite(best) ? 0.0 : best / d.costs[i];
      rows.push_back(d.features[i]);
      labels.push_back(static_cast<float>(y));
      weights.push_back(static_cast<float>(std::max(y, kMinWeight)));
    }
  }
  Matrix m(rows);
  check(XGDMatrixSetFloatInfo(m.handle, "label", labels.data(), labels.size()), "setting labels");
  check(XGDMatrixSetFloatInfo(m.handle, "weight", weights.data(), weights.size()), "setting weights");
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(&m.handle, 1, &b), "creating the booster");
  const std::pair<const char*, std::string> params[] = {
      {"objective", "reg:squarederror"},
      {"tree_method", "hist"},
      {"max_depth", "6"},
      {"eta", "0.2"},
      {"min_child_weight", "0"},
      {"gamma", "0.0001"},
      {"nthread", "1"},
      {"verbosity", "0"},
      {"seed", std::to_string(std::uniform_int_distribution<int>(0, 1 << 30)(rng_))}};
  try {
    for (const auto& [k, v] : params) check(XGBoosterSetParam(b, k, v.c_str()), "setting a parameter");
    for (int i = 0; i < kRounds; ++i) check(XGBoosterUpdateOneIter(b, i, m.handle), "training");
  } catch (...) {
    XGBoosterFree(b);
    throw;
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = b;
}

std::vector<double> CostModel::predict(const std::vector<std::vector<float>>& features) {
  std::vector<double> out(features.size());
  if (features.empty()) return out;
  if (!booster_) {
    for (auto& o : out) o = std::uniform_real_distribution<double>(0, 1)(rng_);
    return out;
  }
  bst_ulong expected = 0;
  check(XGBoosterGetNumFeature(booster_, &expected), "reading the feature count");
  if (features[0].size() != expected)
    fail("cost model: it was trained on ", expected, " features per candidate, got ", features[0].size());
  Matrix m(features);
  bst_ulong len = 0;
  const float* result = nullptr;
  check(XGBoosterPredict(booster_, m.handle, 0, 0, 0, &len, &result), "predicting");
  for (size_t i = 0; i < out.size() && i < len; ++i) out[i] = result[i];
  return out;
}

void CostModel::save(const std::string& path) const {
  if (!booster_) fail("cost model: nothing to save to ", path, " (the model is untrained)");
  bst_ulong len = 0;
  const char* buf = nullptr;
  check(XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &len, &buf), "serializing");
  std::ofstream out(path, std::ios::binary);
  out.write(buf, static_cast<std::streamsize>(len));
  if (!out) fail("cost model: cannot write ", path);
  save_data(path + ".data");
}

// One measurement per line: the task, its cost in seconds (0: failed), its features.
void CostModel::save_data(const std::string& path) const {
  size_t width = 0;
  for (const auto& [task, d] : data_)
    if (!d.features.empty()) width = d.features[0].size();
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << kDataHeader << ' ' << kDataVersion << ' ' << width << '\n';
    for (const auto& [task, d] : data_)
      for (size_t i = 0; i < d.costs.size(); ++i) {
        out << task << ' ' << std::setprecision(17) << (failed(d.costs[i]) ? 0.0 : d.costs[i]) << std::setprecision(9);
        for (float f : d.features[i]) out << ' ' << f;
        out << '\n';
      }
    if (!out) fail("cost model: cannot write ", tmp);
  }
  // Renamed into place, so a session killed while saving leaves the previous data whole.
  std::filesystem::rename(tmp, path);
}

std::map<std::string, CostModel::TaskData> CostModel::read_data(const std::string& path) {
  std::map<std::string, TaskData> data;
  std::ifstream in(path);
  if (!in) return data;  // a model saved before measurements were kept with it
  std::string line, header;
  int version = 0;
  size_t width = 0;
  std::getline(in, line);
  std::istringstream(line) >> header >> version >> width;
  if (header != kDataHeader || version != kDataVersion)
    fail("cost model: ", path, " is not cost-model training data (version ", kDataVersion, ")");
  for (size_t number = 2; std::getline(in, line); ++number) {
    // strtod, unlike operator>>, reads back the "inf" and "nan" that operator<< writes.
    std::istringstream fields(line);
    std::string task, token;
    std::vector<double> values;
    bool ok = static_cast<bool>(fields >> task);
    while (ok && fields >> token) {
      char* end = nullptr;
      values.push_back(std::strtod(token.c_str(), &end));
      ok = *end == '\0';
    }
    if (!ok || values.size() != width + 1)
      fail("cost model: ", path, " line ", number, " is not a task, a cost and ", width, " features");
    data[task].costs.push_back(values[0]);
    data[task].features.emplace_back(values.begin() + 1, values.end());
  }
  return data;
}

void CostModel::load(const std::string& path) {
  std::map<std::string, TaskData> data = read_data(path + ".data");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cost model: cannot read ", path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(nullptr, 0, &b), "creating the booster");
  if (XGBoosterLoadModelFromBuffer(b, text.data(), text.size()) != 0) {
    std::string why = XGBGetLastError();
    XGBoosterFree(b);
    fail("cost model: ", path, " is not a saved cost model: ", why);
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = b;
  data_ = std::move(data);
}

}  // namespace tessera::autotune
