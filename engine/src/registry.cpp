// aisrv engine — engine-spec parsing and the backend registry.
#include "aisrv/engine/registry.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace aisrv::engine {

std::string EngineSpec::get(const std::string& key, const std::string& fallback) const {
  auto it = options.find(key);
  return it == options.end() ? fallback : it->second;
}

Result<EngineSpec> parse_engine_spec(std::string_view text) {
  EngineSpec spec;
  spec.text = std::string(text);
  const size_t colon = text.find(':');
  spec.kind = std::string(text.substr(0, colon));
  if (spec.kind.empty()) return make_error(Errc::invalid_argument, "engine spec '{}' has no kind", text);
  if (colon == std::string_view::npos) return spec;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t sep = rest.find_first_of(",:");
    std::string_view item = rest.substr(0, sep);
    rest = sep == std::string_view::npos ? std::string_view{} : rest.substr(sep + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    std::string key(item.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "on" : std::string(item.substr(eq + 1));
    if (key.empty()) return make_error(Errc::invalid_argument, "engine spec '{}': option without a name", text);
    if (spec.options.count(key))
      return make_error(Errc::invalid_argument, "engine spec '{}': option '{}' given twice", text, key);
    spec.options.emplace(std::move(key), std::move(value));
  }
  return spec;
}

Result<uint64_t> parse_size(std::string_view text) {
  uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) return make_error(Errc::invalid_argument, "'{}' is not a size", text);
  std::string_view suffix(ptr, static_cast<size_t>(end - ptr));
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B" || suffix == "b") mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") mult = 1ull << 30;
  else return make_error(Errc::invalid_argument, "'{}': unknown size suffix '{}' (use K, M or G)", text, suffix);
  if (value > (~0ull) / mult) return make_error(Errc::invalid_argument, "'{}' is too large", text);
  return value * mult;
}

Result<bool> parse_bool(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "on" || t == "true" || t == "1" || t == "yes") return true;
  if (t == "off" || t == "false" || t == "0" || t == "no") return false;
  return make_error(Errc::invalid_argument, "'{}' is not on/off", text);
}

void BackendRegistry::add(std::string kind, std::string description, BackendFactory factory) {
  entries_.push_back(Entry{std::move(kind), std::move(description), std::move(factory)});
}

Result<std::unique_ptr<InferenceBackend>> BackendRegistry::create(const EngineSpec& spec) const {
  for (const auto& e : entries_)
    if (e.kind == spec.kind) return e.factory(spec);
  std::string known;
  for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.kind;
  return make_error(Errc::invalid_argument, "unknown engine kind '{}' (this build has: {})", spec.kind,
                    known.empty() ? "none" : known);
}

}  // namespace aisrv::engine
