// aisrv engine — engine specifications ("cpu:kernels=ref,arena=1M") and the registry that turns one into a
// backend. Each backend library registers a factory under its kind; aisrvd asks the registry by name.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aisrv/engine/backend.hpp"

namespace aisrv::engine {

// "KIND[:key=value[,key=value...]]" ("," and ":" both separate options). A bare "key" means "key=on".
struct EngineSpec {
  std::string kind;
  std::map<std::string, std::string> options;
  std::string text;  // as given

  // Value of an option or `fallback`.
  std::string get(const std::string& key, const std::string& fallback = {}) const;
};
Result<EngineSpec> parse_engine_spec(std::string_view text);

// Sizes such as "4194304", "512K", "4M", "1G" (binary multiples).
Result<uint64_t> parse_size(std::string_view text);
// "on|off|true|false|1|0|yes|no".
Result<bool> parse_bool(std::string_view text);

using BackendFactory = std::function<Result<std::unique_ptr<InferenceBackend>>(const EngineSpec&)>;

class BackendRegistry {
 public:
  void add(std::string kind, std::string description, BackendFactory factory);
  // Errc::invalid_argument naming the known kinds when `spec.kind` is not registered.
  Result<std::unique_ptr<InferenceBackend>> create(const EngineSpec& spec) const;

  struct Entry {
    std::string kind;
    std::string description;  // one line for --help, including the options it takes
    BackendFactory factory;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace aisrv::engine
