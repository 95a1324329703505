// aisrv flash — device specification parsing and store opening (file image or mtd:/dev/mtdN).
#include "aisrv/flash/open.hpp"

#include <filesystem>
#include <fstream>

#include "aisrv/flash/file_device.hpp"
#include "aisrv/flash/mtd_device.hpp"

namespace aisrv::flash {

namespace {

constexpr std::string_view kMtdPrefix = "mtd:";

// Erase-block size recorded in an image's superblock, if the file starts with one that looks like ours.
std::optional<uint32_t> probe_erase_block(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  uint8_t b[format::kSuperblockBytes];
  if (!in.read(reinterpret_cast<char*>(b), sizeof b)) return std::nullopt;
  const uint32_t word = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  const auto v = format::decode_version_word(word);
  if (!v || v->major != format::kMajor || b[4] != 'A' || b[5] != 'S' || b[6] != 'T' || b[7] != 'R') return std::nullopt;
  const uint32_t eb = uint32_t{b[12]} | uint32_t{b[13]} << 8 | uint32_t{b[14]} << 16 | uint32_t{b[15]} << 24;
  if (eb == 0 || (eb & (eb - 1)) != 0) return std::nullopt;
  return eb;
}

}  // namespace

bool is_mtd_spec(std::string_view spec) { return spec.substr(0, kMtdPrefix.size()) == kMtdPrefix; }

Result<std::unique_ptr<FlashDevice>> open_device(std::string_view spec, const OpenOptions& options) {
  if (spec.empty()) return make_error(Errc::invalid_argument, "empty flash device specification");
  if (is_mtd_spec(spec)) {
    const std::string node(spec.substr(kMtdPrefix.size()));
    if (node.empty()) return make_error(Errc::invalid_argument, "'{}': expected mtd:/dev/mtdN", spec);
    auto dev = MtdFlash::open(node, options.read_only);
    if (!dev) return dev.error();
    return std::unique_ptr<FlashDevice>(std::move(*dev));
  }
  const std::filesystem::path path{std::string(spec)};
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (!options.create || options.read_only)
      return make_error(Errc::not_found, "flash image {} does not exist", path.string());
    auto dev = FileFlash::create(path, options.create_geometry);
    if (!dev) return dev.error();
    return std::unique_ptr<FlashDevice>(std::move(*dev));
  }
  const uint32_t eb = options.erase_block ? *options.erase_block : probe_erase_block(path).value_or(kDefaultEraseBlock);
  auto dev = FileFlash::open(path, eb, options.write_size, options.read_only);
  if (!dev) return dev.error();
  return std::unique_ptr<FlashDevice>(std::move(*dev));
}

Result<OpenedStore> open_store(std::string_view spec, const OpenOptions& options) {
  OpenedStore out;
  {
    std::error_code ec;
    out.created = !is_mtd_spec(spec) && !std::filesystem::exists(std::string(spec), ec) && options.create &&
                  !options.read_only;
  }
  out.device = AISRV_TRY(open_device(spec, options));
  if (options.format_blank && !options.read_only) {
    uint8_t word[4];
    AISRV_TRY(out.device->read(0, word));
    if (word[0] == 0xFF && word[1] == 0xFF && word[2] == 0xFF && word[3] == 0xFF) {
      out.store = AISRV_TRY(ModelStore::format(*out.device, options.format));
      out.formatted = true;
      return out;
    }
  }
  out.store = AISRV_TRY(ModelStore::open(*out.device));
  return out;
}

}  // namespace aisrv::flash
