// A user's application that embeds the server: a CPU engine, the model loaded, one inference through the
// in-process channel, the output bytes written to stdout as hex.
//   embedded_app MODEL INPUT
#include <aisrv/engine/builtin.hpp>
#include <aisrv/engine/registry.hpp>
#include <aisrv/engine_slot.hpp>
#include <aisrv/phy/local_channel.hpp>
#include <aisrv/server.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

static std::vector<uint8_t> read(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  aisrv::engine::BackendRegistry registry;
  aisrv::engine::register_builtin_backends(registry);
  std::vector<std::unique_ptr<aisrv::engine::InferenceBackend>> engines;
  engines.push_back(std::move(registry.create(*aisrv::engine::parse_engine_spec("cpu"))).value());
  auto server = std::move(aisrv::server::Server::create({}, std::move(engines))).value();
  if (auto st = server->engine(0)->load_model(read(argv[1]), aisrv::engine::Placement::external, "app"); !st) {
    std::fprintf(stderr, "%s\n", st.error().what().c_str());
    return 1;
  }
  auto channel = std::move(aisrv::phy::LocalChannel::open(*server, 0, "embedded_app")).value();
  const auto input = read(argv[2]);
  std::vector<uint8_t> out(*channel.output_length(0));
  if (!channel.set_input(0, input) || !channel.start_inference() || !channel.get_output(0, out)) return 1;
  for (uint8_t b : out) std::printf("%02x", b);
  std::printf("\n");
  return 0;
}
