// aisrv tests — locating the shared third-party test data and reading files from it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef AISRV_TESTDATA_DEFAULT
#define AISRV_TESTDATA_DEFAULT "../shared/testdata"
#endif

namespace aisrv::test {

// AISRV_TESTDATA from the environment, else the path configured at build time.
inline std::string testdata_candidate() {
  if (const char* env = std::getenv("AISRV_TESTDATA"); env && *env) return env;
  return AISRV_TESTDATA_DEFAULT;
}

// The folder when it exists and holds SOURCES.md.
inline std::optional<std::filesystem::path> testdata_dir() {
  std::filesystem::path p(testdata_candidate());
  std::error_code ec;
  if (std::filesystem::is_regular_file(p / "SOURCES.md", ec)) return p;
  return std::nullopt;
}

// Path of a file inside the test data; throws when the test data is absent.
inline std::filesystem::path testdata_path(const std::string& relative) {
  auto dir = testdata_dir();
  if (!dir) throw std::runtime_error("test data not found at " + testdata_candidate());
  return *dir / relative;
}

inline std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace aisrv::test
