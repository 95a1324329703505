// aisrv Hailo-8 driver layer — device discovery over sysfs and /dev (see discovery.hpp).
#include "aisrv/engine/hailo8/driver/discovery.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace aisrv::engine::hailo8::driver {
namespace {

namespace fs = std::filesystem;

// "hailo<digits>" → the number; nullopt for other names.
std::optional<uint64_t> node_number(const std::string& name) {
  if (name.size() <= 5 || name.compare(0, 5, "hailo") != 0) return std::nullopt;
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(name.data() + 5, name.data() + name.size(), n);
  if (ec != std::errc() || p != name.data() + name.size()) return std::nullopt;
  return n;
}

// First line of a sysfs attribute (at most 255 bytes), trailing whitespace removed; the errno text when it cannot be
// opened or read.
Result<std::string> read_attribute(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return make_error(Errc::io_error, "{} unreadable: {}", file.filename().string(), std::strerror(errno));
  }
  char buf[256];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (n < 0) return make_error(Errc::io_error, "{} unreadable: {}", file.filename().string(), std::strerror(err));
  std::string line(buf, static_cast<size_t>(n));
  if (auto nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  return line;
}

bool name_is_safe(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

bool DiscoveredDevice::maybe_hailo8() const {
  return (!accelerator_type || *accelerator_type == 0) && (!device_id || *device_id == kHailo8PciId);
}

std::string no_device_message(const DiscoveryPaths& paths) {
  return fmt::format("no Hailo-8 device found (looked in {} and {})", paths.sysfs_class.string(),
                     (paths.dev_dir / "hailo*").string());
}

Result<std::vector<DiscoveredDevice>> discover(const DiscoveryPaths& paths) {
  std::map<std::pair<uint64_t, std::string>, DiscoveredDevice> found;  // ordered by number, then name
  auto key = [](const std::string& name) {
    return std::pair{node_number(name).value_or(UINT64_MAX), name};
  };

  std::error_code ec;
  const bool have_class = fs::is_directory(paths.sysfs_class, ec);
  if (have_class) {
    fs::directory_iterator it(paths.sysfs_class, ec);
    if (ec) {
      return make_error(Errc::io_error, "cannot list {}: {}", paths.sysfs_class.string(), ec.message());
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) return make_error(Errc::io_error, "cannot list {}: {}", paths.sysfs_class.string(), ec.message());
      const std::string name = it->path().filename().string();
      if (!name_is_safe(name)) continue;
      DiscoveredDevice d;
      d.name = name;
      d.dev_path = (paths.dev_dir / name).string();
      d.in_sysfs = true;
      const fs::path dir = it->path();
      if (auto v = read_attribute(dir / "board_location")) {
        d.board_location = *v;
      } else {
        d.notes.push_back(v.error().message);
      }
      if (auto v = read_attribute(dir / "device_id")) {
        d.device_id = *v;
      } else {
        d.notes.push_back(v.error().message);
      }
      if (auto v = read_attribute(dir / "accelerator_type")) {
        uint32_t t = 0;
        auto [p, perr] = std::from_chars(v->data(), v->data() + v->size(), t);
        if (perr == std::errc() && p == v->data() + v->size()) {
          d.accelerator_type = t;
        } else {
          d.notes.push_back(fmt::format("accelerator_type '{}' is not a number", *v));
        }
      } else {
        d.notes.push_back(v.error().message);
      }
      found.emplace(key(name), std::move(d));
    }
  }

  // Device nodes the class directory did not list (e.g. /dev passed into a container without /sys/class).
  if (fs::is_directory(paths.dev_dir, ec)) {
    fs::directory_iterator it(paths.dev_dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!node_number(name)) continue;
      auto k = key(name);
      if (found.count(k)) continue;
      DiscoveredDevice d;
      d.name = name;
      d.dev_path = it->path().string();
      d.notes.push_back(have_class ? fmt::format("not listed in {}", paths.sysfs_class.string())
                                   : fmt::format("{} does not exist", paths.sysfs_class.string()));
      found.emplace(std::move(k), std::move(d));
    }
  }

  std::vector<DiscoveredDevice> out;
  for (auto& [k, d] : found) {
    d.node_exists = fs::exists(d.dev_path, ec);
    if (!d.node_exists && d.in_sysfs) d.notes.push_back(fmt::format("device node {} is missing", d.dev_path));
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace aisrv::engine::hailo8::driver
