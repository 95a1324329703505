// aisrv hailo8/runtime — /dev/hailoN nodes and their sysfs board_location.
#include "aisrv/engine/hailo8/runtime/device_nodes.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>

namespace aisrv::engine::hailo8::runtime {
namespace {
// N of "hailoN", or -1.
long node_number(const std::string& name) {
  if (name.size() <= 5 || name.compare(0, 5, "hailo") != 0 || name.size() > 12) return -1;
  long n = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}
}  // namespace

std::vector<std::filesystem::path> find_device_nodes(const DeviceRoots& roots) {
  std::vector<std::pair<long, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(roots.dev, ec)) {
    const long n = node_number(entry.path().filename().string());
    if (n >= 0) found.emplace_back(n, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

Result<std::string> board_location(const DeviceRoots& roots, const std::filesystem::path& node) {
  const auto attr = roots.sysfs_class / node.filename() / "board_location";
  std::ifstream in(attr);
  std::string value;
  if (!in || !std::getline(in, value))
    return make_error(Errc::not_found, "cannot read {} (the PCI id of {})", attr.string(), node.string());
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  const bool plausible = !value.empty() && value.size() < 32 && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
  });
  if (!plausible) return make_error(Errc::not_found, "{} holds '{}', not a PCI id", attr.string(), value);
  return value;
}

}  // namespace aisrv::engine::hailo8::runtime
