// aisrvd — engine and chain argument parsing.
#include "daemon_config.hpp"

#include <charconv>
#include <map>

#include "aisrv/protocol/limits.h"

namespace aisrv::daemon {

static Result<uint32_t> parse_number(std::string_view text, std::string_view what, std::string_view whole) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    return make_error(Errc::invalid_argument, "'{}': {} '{}' is not a number", whole, what, text);
  return v;
}

Result<std::vector<engine::EngineSpec>> parse_engine_args(const std::vector<std::string>& args) {
  std::map<uint32_t, engine::EngineSpec> by_number;
  for (const auto& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos)
      return make_error(Errc::invalid_argument, "--engine '{}': expected N=KIND[:options], e.g. 0=cpu", a);
    const uint32_t n = AISRV_TRY(parse_number(std::string_view(a).substr(0, eq), "engine number", a));
    if (n >= AISRV_MAX_ENGINES)
      return make_error(Errc::invalid_argument, "--engine '{}': engine numbers go up to {}", a, AISRV_MAX_ENGINES - 1);
    auto spec = AISRV_TRY(engine::parse_engine_spec(std::string_view(a).substr(eq + 1)));
    if (!by_number.emplace(n, std::move(spec)).second)
      return make_error(Errc::invalid_argument, "--engine: engine {} is configured twice", n);
  }
  std::vector<engine::EngineSpec> specs;
  for (auto& [n, spec] : by_number) {
    if (n != specs.size())
      return make_error(Errc::invalid_argument, "--engine: engines must be numbered 0..N-1; engine {} is missing",
                        specs.size());
    specs.push_back(std::move(spec));
  }
  return specs;
}

Result<std::vector<std::pair<uint32_t, std::string>>> parse_sensor_args(const std::vector<std::string>& args) {
  std::vector<std::pair<uint32_t, std::string>> sensors;
  for (const auto& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq + 1 == a.size())
      return make_error(Errc::invalid_argument, "--sensor '{}': expected N=PATH, e.g. 0=/run/camera.fifo", a);
    const uint32_t n = AISRV_TRY(parse_number(std::string_view(a).substr(0, eq), "engine number", a));
    for (const auto& s : sensors)
      if (s.first == n) return make_error(Errc::invalid_argument, "--sensor: engine {} has two sensors", n);
    sensors.emplace_back(n, a.substr(eq + 1));
  }
  return sensors;
}

Result<std::vector<std::pair<uint32_t, uint32_t>>> parse_chain_args(const std::vector<std::string>& args) {
  std::vector<std::pair<uint32_t, uint32_t>> chains;
  for (const auto& a : args) {
    const size_t colon = a.find(':');
    if (colon == std::string::npos)
      return make_error(Errc::invalid_argument, "--chain '{}': expected FROM:TO, e.g. 0:1", a);
    const uint32_t from = AISRV_TRY(parse_number(std::string_view(a).substr(0, colon), "engine", a));
    const uint32_t to = AISRV_TRY(parse_number(std::string_view(a).substr(colon + 1), "engine", a));
    chains.emplace_back(from, to);
  }
  return chains;
}

}  // namespace aisrv::daemon
