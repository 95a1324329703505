// A user's application: connect to aisrvd, load a model, run one inference, print the top class as the result
// decoder of the client library reads it.
//   remote_app TARGET MODEL INPUT
#include <aisrv/client/client.hpp>
#include <aisrv/results/results.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

static std::vector<uint8_t> read(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  auto c = aisrv::client::Client::connect(argv[1]);
  if (!c) {
    std::fprintf(stderr, "%s\n", c.error().what().c_str());
    return 1;
  }
  const auto model = read(argv[2]), input = read(argv[3]);
  if (auto st = c->load_model(0, model); !st) {
    std::fprintf(stderr, "%s\n", st.error().what().c_str());
    return 1;
  }
  const std::vector<std::span<const uint8_t>> inputs{input};
  auto out = c->infer(0, inputs);
  if (!out) {
    std::fprintf(stderr, "%s\n", out.error().what().c_str());
    return 1;
  }
  auto tensors = c->tensor_info(0);
  auto metadata = c->model_metadata(0);
  if (!tensors || !metadata) return 1;
  const aisrv::results::ModelDescription description{tensors->inputs, tensors->outputs, metadata->entries};
  auto found = aisrv::results::decode(description, *out, {.task = aisrv::results::Task::classification});
  if (!found || found->classes.empty()) {
    std::fprintf(stderr, "%s\n", found ? "no class" : found.error().what().c_str());
    return 1;
  }
  std::printf("library %s, server %s, top %d\n", std::string(aisrv::client::library_version()).c_str(),
              c->server_version().server_version.c_str(), found->classes[0].index);
  return 0;
}
