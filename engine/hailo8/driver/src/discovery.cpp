// aisrv hailo8/driver — device discovery over sysfs and /dev (see discovery.hpp).
#include "aisrv/engine/hailo8/driver/discovery.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/common/printable_text.hpp"

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

bool hex_digits(std::string_view s, size_t from, size_t count) {
  if (from + count > s.size()) return false;
  for (size_t i = from; i < from + count; ++i) {
    const char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

// "DDDD:BB:SS.F" as Linux prints pci_name() (domain 4 to 8 hex digits, bus and slot 2, function 0-7).
bool is_pci_address(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon < 4 || colon > 8 || !hex_digits(s, 0, colon)) return false;
  const std::string_view rest = s.substr(colon);
  return rest.size() == 8 && rest[0] == ':' && hex_digits(rest, 1, 2) && rest[3] == ':' && hex_digits(rest, 4, 2) &&
         rest[6] == '.' && rest[7] >= '0' && rest[7] <= '7';
}

// "vvvv:dddd" (vendor and device id in hex).
bool is_pci_id(std::string_view s) { return s.size() == 9 && hex_digits(s, 0, 4) && s[4] == ':' && hex_digits(s, 5, 4); }

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

std::string no_hailo8_message(const std::vector<DiscoveredDevice>& found, const DiscoveryPaths& paths) {
  std::string others, missing;
  for (const auto& d : found) {
    if (!d.maybe_hailo8()) {
      others += fmt::format("{}{} (accelerator type {}, PCI id {})", others.empty() ? "" : ", ", d.name,
                            d.accelerator_type ? std::to_string(*d.accelerator_type) : "?", d.device_id.value_or("?"));
    } else if (!d.node_exists) {
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", d.dev_path);
    }
  }
  std::string msg = no_device_message(paths);
  if (!others.empty()) msg += fmt::format("; other Hailo accelerators present: {}", others);
  if (!missing.empty()) msg += fmt::format("; listed without a device node: {}", missing);
  return msg;
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
        if (is_pci_address(*v)) {
          d.board_location = *v;
        } else {
          d.notes.push_back(fmt::format("board_location '{}' is not a PCI address", common::printable_text(*v)));
        }
      } else {
        d.notes.push_back(v.error().message);
      }
      if (auto v = read_attribute(dir / "device_id")) {
        if (is_pci_id(*v)) {
          d.device_id = *v;
        } else {
          d.notes.push_back(fmt::format("device_id '{}' is not a PCI id", common::printable_text(*v)));
        }
      } else {
        d.notes.push_back(v.error().message);
      }
      if (auto v = read_attribute(dir / "accelerator_type")) {
        uint32_t t = 0;
        auto [p, perr] = std::from_chars(v->data(), v->data() + v->size(), t);
        if (perr == std::errc() && p == v->data() + v->size()) {
          d.accelerator_type = t;
        } else {
          d.notes.push_back(fmt::format("accelerator_type '{}' is not a number", common::printable_text(*v)));
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
