#include "targets/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Support/Host.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "runtime/error.h"
#include "targets/llvm/target_machine.h"

namespace tessera::targets {

namespace {

const std::vector<std::string>& options_of(const std::string& kind) {
  static const std::vector<std::string> llvm = {"mtriple", "mcpu", "mattr"};
  static const std::vector<std::string> cuda = {"arch"};
  static const std::vector<std::string> opencl = {"device"};
  static const std::vector<std::string> none;
  if (kind == "llvm") return llvm;
  if (kind == "cuda") return cuda;
  if (kind == "opencl") return opencl;
  return none;
}

// Characters of CPU names, triples and feature names; anything else is a typo or an injection.
bool is_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c == '.'; });
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

void set_option(Target& t, const std::string& text, const std::string& key, const std::string& value) {
  const std::string where = "target '" + text + "': option -" + key;
  if (value.empty()) fail(where, " needs a value (-", key, "=...)");
  if (key == "mattr") {
    for (const std::string& f : split(value, ',')) {
      if (f.size() < 2 || (f[0] != '+' && f[0] != '-') || !is_name(f.substr(1)))
        fail(where, ": feature '", f, "' must be +name or -name");
      t.mattr.push_back(f);
    }
    return;
  }
  if (!is_name(value)) fail(where, ": invalid value '", value, "'");
  if (key == "mtriple") t.mtriple = value;
  else if (key == "mcpu") t.mcpu = value;
  else if (key == "arch") {
    if (value.size() < 4 || value.compare(0, 3, "sm_") != 0 ||
        !std::all_of(value.begin() + 3, value.end(), [](unsigned char c) { return std::isdigit(c); }))
      fail(where, ": expected sm_<number> (e.g. sm_90), got '", value, "'");
    t.arch = value;
  } else if (key == "device") {
    if (device_slug(value) != value)
      fail(where, ": expected a device name as device_slug spells it ('", device_slug(value), "'), got '", value, "'");
    t.device = value;
  }
}

}  // namespace

Target Target::parse(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) fail("empty target string (expected llvm, c, opencl or cuda)");
  Target t;
  t.kind = words[0];
  if (t.kind != "llvm" && t.kind != "c" && t.kind != "opencl" && t.kind != "cuda")
    fail("target '", text, "': unknown kind '", t.kind, "' (expected llvm, c, opencl or cuda)");
  const auto& allowed = options_of(t.kind);
  std::vector<std::string> seen;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    size_t eq = w.find('=');
    if (w.size() < 2 || w[0] != '-' || w[1] == '-')
      fail("target '", text, "': expected an option -name=value, got '", w, "'");
    std::string key = w.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
    std::string value = eq == std::string::npos ? "" : w.substr(eq + 1);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string known;
      for (const auto& a : allowed) known += (known.empty() ? "-" : ", -") + a;
      fail("target '", text, "': unknown option '-", key, "' for kind ", t.kind,
           known.empty() ? std::string(" (it takes no options)") : " (known: " + known + ")");
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      fail("target '", text, "': option -", key, " is given twice");
    seen.push_back(key);
    set_option(t, text, key, value);
  }
  return t;
}

Target Target::host() {
  Target t;
  t.kind = "llvm";
  t.mtriple = llvm::sys::getProcessTriple();
  t.mcpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features;
  if (llvm::sys::getHostCPUFeatures(features)) {
    for (const auto& f : features) t.mattr.push_back((f.getValue() ? "+" : "-") + f.getKey().str());
    // StringMap iterates in hash order; sorting makes the string canonical.
    std::sort(t.mattr.begin(), t.mattr.end(),
              [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  }
  return t;
}

Target Target::with_host_defaults() const {
  Target t = *this;
  if (t.kind != "llvm") return t;
  const std::string process = llvm::sys::getProcessTriple();
  if (t.mtriple.empty()) t.mtriple = process;
  // A foreign architecture's CPU stays unset: code for it is generic.
  if (!t.mcpu.empty() || llvm::Triple(llvm::Triple::normalize(t.mtriple)).getArch() != llvm::Triple(process).getArch())
    return t;
  t.mcpu = llvm::sys::getHostCPUName().str();
  // Code for an unset CPU uses every feature of the host, which the name alone may not imply;
  // the features given stay last, so they still win.
  std::vector<std::string> mattr;
  for (const std::string& f : llvm_backend::host_features_beyond_cpu_name()) {
    auto same_feature = [&](const std::string& g) { return g.substr(1) == f.substr(1); };
    if (std::none_of(t.mattr.begin(), t.mattr.end(), same_feature)) mattr.push_back(f);
  }
  mattr.insert(mattr.end(), t.mattr.begin(), t.mattr.end());
  t.mattr = std::move(mattr);
  return t;
}

std::string Target::str() const {
  std::string s = kind;
  if (!mtriple.empty()) s += " -mtriple=" + mtriple;
  if (!mcpu.empty()) s += " -mcpu=" + mcpu;
  if (!mattr.empty()) {
    s += " -mattr=";
    for (size_t i = 0; i < mattr.size(); ++i) s += (i ? "," : "") + mattr[i];
  }
  if (!arch.empty()) s += " -arch=" + arch;
  if (!device.empty()) s += " -device=" + device;
  return s;
}

std::string device_slug(const std::string& name) {
  std::string slug;
  bool gap = false;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '.' || c == '_') {
      if (gap && !slug.empty()) slug += '-';
      slug += static_cast<char>(std::tolower(c));
      gap = false;
    } else {
      gap = true;
    }
  }
  return slug;
}

}  // namespace tessera::targets
