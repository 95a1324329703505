// aisrv tests — the cases of the shared test data's expected/cases.json as test-data paths: a model, its input and
// output 0's reference bytes. Read by the tests that run every case through a transport (daemon, SPI).
#pragma once

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "testdata.hpp"

namespace aisrv::test {

struct ExpectedCase {
  std::string model, input, output;
};

inline std::vector<ExpectedCase> expected_cases() {
  std::ifstream in(testdata_path("expected/cases.json"));
  REQUIRE(in);
  std::vector<ExpectedCase> r;
  for (const auto& c : nlohmann::json::parse(in))
    r.push_back({c.at("model"), c.at("input"), c.at("outputs").at(0).at("file")});
  return r;
}

}  // namespace aisrv::test
