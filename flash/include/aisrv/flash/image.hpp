// aisrv flash — the offline image tool as a library (`aisrv flash-image create|inspect`): build a flash image
// holding models for chosen clients, for programming chips in production, and inspect an image or device (layout,
// journal, catalogue, every stored segment's hash verified). Rendering to text and JSON lives here too, so the CLI
// stays a thin wrapper.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aisrv/flash/open.hpp"
#include "aisrv/flash/store.hpp"

namespace aisrv::flash {

struct ImageModel {
  uint32_t client = 0;
  std::filesystem::path file;
  std::string name;  // empty: the file's stem (at most 32 bytes)
  std::optional<std::filesystem::path> parameters;
};

struct CreateImageOptions {
  std::filesystem::path out;
  Geometry geometry{kDefaultImageSize, kDefaultEraseBlock, 1};
  uint32_t clients = 16;
  std::vector<ImageModel> models;
  bool overwrite = false;  // replace an existing file
};

// "0=a.tflite" -> {0, "a.tflite"}; the client number is checked against `clients` later.
Result<ImageModel> parse_model_arg(std::string_view arg);
// "0=NAME" -> {0, "NAME"}.
Result<std::pair<uint32_t, std::string>> parse_name_arg(std::string_view arg);

struct SlotReport {
  uint8_t slot = 0;
  bool active = false;
  Slot info;
  std::optional<Error> problem;  // nullopt: every segment verified
};
struct ClientReport {
  uint32_t client = 0;
  uint64_t seq = 0;
  std::vector<SlotReport> slots;  // used slots only, active first
};
struct ImageReport {
  std::string device;
  Geometry geometry;
  format::Superblock superblock;
  JournalStats journal;
  std::vector<ClientReport> clients;  // clients holding at least one slot
  std::vector<std::string> notes;
  uint64_t free_bytes = 0;
  bool ok() const;  // every listed slot verified
};

// Creates the image file (refuses to overwrite unless asked), formats it, writes every model; removes the
// half-made file on failure. Returns the inspection of the result.
Result<ImageReport> create_image(const CreateImageOptions& options);
// Opens read-only (a file image or mtd:/dev/mtdN), never writes, verifies every stored slot.
Result<ImageReport> inspect_image(std::string_view spec, const OpenOptions& options = {});
ImageReport inspect_store(ModelStore& store);

std::string render_text(const ImageReport& report);
nlohmann::json render_json(const ImageReport& report);

}  // namespace aisrv::flash
