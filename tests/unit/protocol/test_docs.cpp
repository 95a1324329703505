// Unit test: docs/protocol.md documents every command and status bit of the tables with its value, so the spec
// cannot drift from protocol/.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include "aisrv/protocol/protocol.hpp"

TEST_CASE("docs/protocol.md lists every command with its value and every status bit") {
  std::ifstream in(AISRV_DOCS_DIR "/protocol.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (unsigned i = 0; i < aisrv_command_count(); ++i) {
    const auto* row = aisrv_command_at(i);
    const std::string needle = fmt::format("| 0x{:02X} | `{}` |", row->value, row->name);
    CHECK_MESSAGE(doc.find(needle) != std::string::npos, "missing row: " << needle);
  }
#define AISRV_X_DOC(name, bit, text) \
  CHECK_MESSAGE(doc.find(fmt::format("| 0x{:04X} | `{}` |", bit, #name)) != std::string::npos, #name);
  AISRV_STATUS_TABLE(AISRV_X_DOC)
#undef AISRV_X_DOC
}
