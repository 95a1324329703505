// aisrv tests — test double of what the hailo_pci driver publishes outside its ioctls: a private directory tree shaped
// like /sys/class/hailo_chardev/<name>/{board_location,device_id,accelerator_type} and /dev/<name>, removed at the end
// of the test. Discovery (engine/hailo8/driver/discovery.hpp) and the hailo8 backend take its paths as their roots.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "aisrv/engine/hailo8/driver/discovery.hpp"

namespace aisrv::test {

class HailoDeviceTree {
 public:
  HailoDeviceTree() {
    static std::atomic<int> counter{0};
    root_ = std::filesystem::temp_directory_path() /
            ("aisrv-hailo-tree-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    paths.sysfs_class = root_ / "sys/class/hailo_chardev";
    paths.dev_dir = root_ / "dev";
  }
  ~HailoDeviceTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  HailoDeviceTree(const HailoDeviceTree&) = delete;
  HailoDeviceTree& operator=(const HailoDeviceTree&) = delete;

  void write(const std::filesystem::path& file, const std::string& text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  // A device as the driver publishes it: attributes without trailing newline (sprintf "%s"), and its node (an
  // empty regular file: only the driver double answers its ioctls).
  void device(const std::string& name, const std::string& bdf, const std::string& id = "1e60:2864",
              const std::string& type = "0", bool node = true) {
    write(paths.sysfs_class / name / "board_location", bdf);
    write(paths.sysfs_class / name / "device_id", id);
    write(paths.sysfs_class / name / "accelerator_type", type);
    if (node) write(paths.dev_dir / name, "");
  }
  std::string dev(const std::string& name) const { return (paths.dev_dir / name).string(); }
  const std::filesystem::path& root() const { return root_; }

  engine::hailo8::driver::DiscoveryPaths paths;

 private:
  std::filesystem::path root_;
};

}  // namespace aisrv::test
