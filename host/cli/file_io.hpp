// aisrv CLI — reading and writing whole files with errors that name the file.
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::cli {

inline Result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::invalid_argument, "cannot read {}: {}", path, std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error(Errc::invalid_argument, "error reading {}", path);
  return bytes;
}

inline Status write_file(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(Errc::invalid_argument, "cannot write {}: {}", path, std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) return make_error(Errc::invalid_argument, "error writing {}", path);
  return ok();
}

}  // namespace aisrv::cli
