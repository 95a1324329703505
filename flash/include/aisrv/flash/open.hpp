// aisrv flash — opening a model store from a device specification, as `aisrvd --flash SPEC` and the CLI do:
// "mtd:/dev/mtdN" opens a Linux MTD device, anything else is an image file (created on request with a chosen
// geometry; an existing image's erase-block size comes from its superblock unless given).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "aisrv/flash/device.hpp"
#include "aisrv/flash/store.hpp"

namespace aisrv::flash {

inline constexpr uint64_t kDefaultImageSize = 16ull * 1024 * 1024;
inline constexpr uint32_t kDefaultEraseBlock = 64 * 1024;

struct OpenOptions {
  bool read_only = false;
  // A missing image file is created (all 0xFF) with this geometry when `create` is set.
  bool create = false;
  Geometry create_geometry{kDefaultImageSize, kDefaultEraseBlock, 1};
  // Erase-block size of an existing image file; default: what its superblock says, else kDefaultEraseBlock.
  std::optional<uint32_t> erase_block;
  uint32_t write_size = 1;
  // Format the device when it is blank (its version word reads 0xFFFFFFFF, as erased flash does). A device holding
  // anything else is never formatted implicitly.
  bool format_blank = false;
  FormatOptions format;
};

struct OpenedStore {
  std::unique_ptr<FlashDevice> device;
  std::unique_ptr<ModelStore> store;  // refers to *device
  bool created = false;               // the image file was created
  bool formatted = false;             // a blank device was formatted
};

bool is_mtd_spec(std::string_view spec);
Result<std::unique_ptr<FlashDevice>> open_device(std::string_view spec, const OpenOptions& options);
Result<OpenedStore> open_store(std::string_view spec, const OpenOptions& options);

}  // namespace aisrv::flash
