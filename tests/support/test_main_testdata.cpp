// aisrv tests — doctest main for tests that read the third-party test data (../shared/testdata).
// When the data is absent the binary prints why and exits 77, which ctest reports as "skipped"
// (SKIP_RETURN_CODE); with AISRV_REQUIRE_TESTDATA=1 (CI) the absence is a failure instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "testdata.hpp"

int main(int argc, char** argv) {
  const auto dir = aisrv::test::testdata_dir();
  if (!dir) {
    const char* require = std::getenv("AISRV_REQUIRE_TESTDATA");
    const bool required = require && std::string(require) == "1";
    std::fprintf(stderr, "%s: test data not found at '%s' (set AISRV_TESTDATA to the shared testdata folder)%s\n",
                 required ? "FAILED" : "SKIPPED", aisrv::test::testdata_candidate().c_str(),
                 required ? "; AISRV_REQUIRE_TESTDATA=1 makes this a failure" : "");
    return required ? 1 : 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
