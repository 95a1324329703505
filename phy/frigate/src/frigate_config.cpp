// aisrv phy frigate — `--frigate ENDPOINT=ENGINE[,option...]` checked into an EndpointConfig (docs/frigate.md).
#include <charconv>
#include <cmath>

#include "aisrv/engine/registry.hpp"
#include "aisrv/phy/frigate_endpoint.hpp"

namespace aisrv::phy::frigate {

namespace {

Result<double> number(std::string_view text, std::string_view what) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    return make_error(Errc::invalid_argument, "{} '{}' is not a number", what, text);
  return v;
}

Result<std::vector<float>> channels(std::string_view text, std::string_view what, bool positive) {
  std::vector<float> out;
  size_t start = 0;
  for (;;) {
    const size_t colon = text.find(':', start);
    auto v = number(text.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start), what);
    if (!v) return v.error();
    if (positive && *v <= 0) return make_error(Errc::invalid_argument, "{} must be above 0", what);
    out.push_back(static_cast<float>(*v));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (out.size() != 1 && out.size() != 3)
    return make_error(Errc::invalid_argument, "{} takes one value or three (R:G:B)", what);
  return out;
}

// The host of tcp://HOST:PORT is this machine's loopback.
bool loopback_host(std::string_view host) {
  return host == "localhost" || host == "[::1]" || host == "::1" || host.rfind("127.", 0) == 0;
}

Status check_endpoint(const std::string& ep, bool allow_remote) {
  if (ep.rfind("ipc://", 0) == 0) {
    if (ep.size() == 6) return make_error(Errc::invalid_argument, "'{}' has no path", ep);
    return {};
  }
  if (ep.rfind("tcp://", 0) == 0) {
    const std::string_view rest = std::string_view(ep).substr(6);
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size())
      return make_error(Errc::invalid_argument, "'{}' is not tcp://HOST:PORT", ep);
    const std::string_view port = rest.substr(colon + 1);
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p == 0 || p > 65535)
      return make_error(Errc::invalid_argument, "'{}': port '{}' is not 1..65535", ep, port);
    const std::string_view host = rest.substr(0, colon);
    if (!loopback_host(host) && !allow_remote)
      return make_error(Errc::invalid_argument,
                        "'{}' is not a loopback address: other machines could use the engine; add --allow-remote "
                        "(docs/security.md) or use tcp://127.0.0.1:PORT",
                        ep);
    return {};
  }
  return make_error(Errc::invalid_argument, "'{}' is neither ipc://PATH nor tcp://HOST:PORT", ep);
}

}  // namespace

Result<EndpointConfig> parse_endpoint_spec(std::string_view spec, uint32_t engines, bool allow_remote) {
  auto fail = [&](const Error& e) {
    return make_error(Errc::invalid_argument, "--frigate {}: {} (expected ENDPOINT=ENGINE[,option...], e.g. "
                      "ipc:///tmp/cache/zmq_detector=0 or tcp://127.0.0.1:5555=0,accept-models)", spec, e.message);
  };
  const size_t comma = spec.find(',');
  const std::string_view head = spec.substr(0, comma);
  const size_t eq = head.rfind('=');
  if (eq == std::string_view::npos) return fail(make_error(Errc::invalid_argument, "no '=ENGINE'"));
  EndpointConfig c;
  c.endpoint = std::string(head.substr(0, eq));
  const std::string_view engine = head.substr(eq + 1);
  auto [end, ec] = std::from_chars(engine.data(), engine.data() + engine.size(), c.engine);
  if (ec != std::errc() || end != engine.data() + engine.size() || engine.empty())
    return fail(make_error(Errc::invalid_argument, "engine '{}' is not a number", engine));
  if (c.engine >= engines)
    return fail(make_error(Errc::invalid_argument, "engine {} does not exist (engines 0..{})", c.engine, engines - 1));
  if (auto st = check_endpoint(c.endpoint, allow_remote); !st) return fail(st.error());
  std::string_view rest = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
  while (comma != std::string_view::npos) {
    const size_t next = rest.find(',');
    const std::string_view opt = rest.substr(0, next);
    const size_t oeq = opt.find('=');
    const std::string_view key = opt.substr(0, oeq);
    const std::string_view value = oeq == std::string_view::npos ? std::string_view() : opt.substr(oeq + 1);
    const bool has_value = oeq != std::string_view::npos;
    auto need_value = [&]() -> Status {
      if (!has_value || value.empty())
        return make_error(Errc::invalid_argument, "option '{}' needs a value ({}=...)", key, key);
      return {};
    };
    if (key == "accept-models") {
      if (has_value) return fail(make_error(Errc::invalid_argument, "accept-models takes no value"));
      c.accept_models = true;
    } else if (key == "threshold") {
      if (auto st = need_value(); !st) return fail(st.error());
      auto v = number(value, "threshold");
      if (!v) return fail(v.error());
      if (*v < 0 || *v > 1) return fail(make_error(Errc::invalid_argument, "threshold must be 0..1"));
      c.threshold = static_cast<float>(*v);
    } else if (key == "mean" || key == "std") {
      if (auto st = need_value(); !st) return fail(st.error());
      auto v = channels(value, key, key == "std");
      if (!v) return fail(v.error());
      (key == "mean" ? c.mean : c.std) = *v;
    } else if (key == "peers") {
      if (auto st = need_value(); !st) return fail(st.error());
      auto v = number(value, "peers");
      if (!v) return fail(v.error());
      if (*v < 1 || *v > 4096 || *v != std::floor(*v))
        return fail(make_error(Errc::invalid_argument, "peers must be 1..4096"));
      c.max_peers = static_cast<uint32_t>(*v);
    } else if (key == "idle") {
      if (auto st = need_value(); !st) return fail(st.error());
      auto v = number(value, "idle");
      if (!v) return fail(v.error());
      if (*v < 1 || *v > 86400 * 7 || *v != std::floor(*v))
        return fail(make_error(Errc::invalid_argument, "idle must be 1..604800 seconds"));
      c.idle = std::chrono::seconds(static_cast<int64_t>(*v));
    } else if (key == "max-message") {
      if (auto st = need_value(); !st) return fail(st.error());
      auto v = engine::parse_size(value);
      if (!v) return fail(v.error());
      if (*v < 4096 || *v > (1ull << 30))
        return fail(make_error(Errc::invalid_argument, "max-message must be 4K..1G"));
      c.max_message = *v;
    } else {
      return fail(make_error(Errc::invalid_argument,
                             "unknown option '{}' (accept-models, threshold=, mean=, std=, peers=, idle=, "
                             "max-message=)",
                             key));
    }
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  if (c.mean.empty() != c.std.empty())
    return fail(make_error(Errc::invalid_argument, "mean and std go together"));
  return c;
}

}  // namespace aisrv::phy::frigate
