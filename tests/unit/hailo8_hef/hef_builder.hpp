// aisrv tests — building HEF files in tests: containers of every version around a protobuf (with the checksum
// computed independently of the reader's code path: OpenSSL MD5, zlib CRC-32, libxxhash XXH3-64), checksum refresh
// for mutation tests, and a small builder of synthetic HEF protobufs in our reduced schema.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <openssl/evp.h>
#include <xxhash.h>
#include <zlib.h>

#include "hef_reduced.pb.h"

namespace aisrv::test::hef {

namespace pb = aisrv::engine::hailo8::hefpb;

inline void put_be32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + i] = static_cast<uint8_t>(x >> (24 - 8 * i));
}
inline void put_be64(std::vector<uint8_t>& v, size_t at, uint64_t x) {
  put_be32(v, at, static_cast<uint32_t>(x >> 32));
  put_be32(v, at + 4, static_cast<uint32_t>(x));
}
inline uint32_t get_be32(std::span<const uint8_t> v, size_t at) {
  return (uint32_t{v[at]} << 24) | (uint32_t{v[at + 1]} << 16) | (uint32_t{v[at + 2]} << 8) | v[at + 3];
}

inline size_t header_size(uint32_t version) {
  static const size_t sizes[] = {32, 28, 44, 56};
  return version < 4 ? sizes[version] : 0;
}

// Recomputes the checksum of a well-formed container of any version in place.
inline void refresh_checksum(std::vector<uint8_t>& f) {
  const uint32_t version = get_be32(f, 4);
  const size_t hs = header_size(version);
  const uint8_t* body = f.data() + hs;
  const size_t n = f.size() - hs;
  if (version == 0) {
    unsigned int len = 0;
    uint8_t md[EVP_MAX_MD_SIZE];
    EVP_Digest(body, n, md, &len, EVP_md5(), nullptr);
    std::memcpy(f.data() + 16, md, 16);
  } else if (version == 1) {
    put_be32(f, 12, static_cast<uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), body, n)));
  } else {
    put_be64(f, 12, XXH3_64bits(body, n));
  }
}

// A container of `version` around `proto` (+ CCWs for v1-v3; v3 also padding and additional info).
inline std::vector<uint8_t> container(uint32_t version, std::span<const uint8_t> proto,
                                      std::span<const uint8_t> ccws = {}, uint32_t padding = 0,
                                      std::span<const uint8_t> additional = {}) {
  const size_t hs = header_size(version);
  std::vector<uint8_t> f(hs, 0);
  put_be32(f, 0, 0x01484546);
  put_be32(f, 4, version);
  put_be32(f, 8, static_cast<uint32_t>(proto.size()));
  f.insert(f.end(), proto.begin(), proto.end());
  if (version == 1) {
    put_be64(f, 16, ccws.size());
  } else if (version == 2) {
    put_be64(f, 20, ccws.size());
  } else if (version == 3) {
    put_be64(f, 20, ccws.size() + padding);
    put_be32(f, 28, padding);
    put_be64(f, 32, additional.size());
    f.insert(f.end(), padding, uint8_t{0});
  }
  if (version >= 1) f.insert(f.end(), ccws.begin(), ccws.end());
  if (version == 3) f.insert(f.end(), additional.begin(), additional.end());
  refresh_checksum(f);
  return f;
}

inline std::vector<uint8_t> serialize(const pb::File& file) {
  std::string s;
  file.SerializeToString(&s);
  return std::vector<uint8_t>(s.begin(), s.end());
}

inline std::vector<uint8_t> container(uint32_t version, const pb::File& file) {
  const auto proto = serialize(file);
  return container(version, proto);
}

// ---- synthetic protobufs --------------------------------------------------------------------------------------
// A header for a Hailo-8 HEF with the periph-calculation extension.
inline pb::File make_file(uint32_t hw_arch = 1, const std::string& sdk = "3.27.0") {
  pb::File f;
  f.mutable_header()->set_hw_arch(hw_arch);
  f.mutable_header()->set_sdk_version(sdk);
  f.mutable_header()->set_timestamp_ms(1700000000000ull);
  f.mutable_header()->set_format_version(4);
  auto* e = f.add_extensions();
  e->set_type(26);
  e->set_name("Periph configuration calculated in HailoRT (PERIPH_CALCULATION_IN_HAILORT)");
  return f;
}

inline void add_extension(pb::File& f, uint32_t type, bool optional = false) {
  auto* e = optional ? f.add_optional_extensions() : f.add_extensions();
  e->set_type(type);
  e->set_name("extension " + std::to_string(type));
}

// A legacy (non-net-flow) network group with `contexts` contexts.
inline pb::NetworkGroup* add_group(pb::File& f, const std::string& name, int contexts = 1) {
  auto* g = f.add_network_groups();
  g->mutable_metadata()->set_name(name);
  for (int i = 0; i < contexts; ++i) g->add_contexts()->set_index(static_cast<uint32_t>(i));
  return g;
}

struct EdgeSpec {
  std::string name;
  uint32_t direction = 0;  // 0 in, 1 out
  uint32_t h = 1, w = 1, f = 1;
  uint32_t ph = 0, pw = 0, pf = 0;  // 0: same as unpadded
  uint32_t format = 0;              // device format id (0 NHWC, 1 NHCW, 2 NC, 3 FCR, 5 NHW, 6 NMS, 7 F8CR)
  uint32_t data_bytes = 1;
  uint32_t sys_index = 0;
  uint32_t network_index = 0;
  float scale = 1.0f, zero_point = 0.0f, limit_min = 0.0f, limit_max = 255.0f;
};

inline pb::EdgeInfo* fill_info(pb::EdgeInfo* info, const EdgeSpec& s) {
  info->set_name(s.name);
  auto* b = info->mutable_base();
  b->set_height(s.h);
  b->set_width(s.w);
  b->set_features(s.f);
  b->set_padded_height(s.ph ? s.ph : s.h);
  b->set_padded_width(s.pw ? s.pw : s.w);
  b->set_padded_features(s.pf ? s.pf : s.f);
  b->set_format(s.format);
  b->set_data_bytes(s.data_bytes);
  b->set_sys_index(s.sys_index);
  b->set_core_buffers_per_frame(s.h);
  b->set_core_bytes_per_buffer(std::min<uint32_t>(65535, s.w * s.f * s.data_bytes));
  b->set_max_shmifo_size(65536);
  auto* n = info->mutable_numeric();
  n->set_scale(s.scale);
  n->set_zero_point(s.zero_point);
  n->set_limit_min(s.limit_min);
  n->set_limit_max(s.limit_max);
  return info;
}

// A boundary info edge layer in context `ctx` of `g`.
inline pb::EdgeLayer* add_edge(pb::NetworkGroup* g, const EdgeSpec& s, int ctx = 0) {
  auto* e = g->mutable_contexts(ctx)->mutable_metadata()->add_edge_layers();
  e->set_direction(s.direction);
  e->set_kind(0);
  e->set_network_index(s.network_index);
  e->mutable_switch_info()->set_connection(0);
  fill_info(e->mutable_info(), s);
  if (s.direction == 1) g->add_sorted_outputs(s.name);
  return e;
}

// A minimal valid single-group HEF protobuf: one NC input, one NC output.
inline pb::File simple_file(const std::string& group = "net") {
  pb::File f = make_file();
  auto* g = add_group(f, group);
  add_edge(g, EdgeSpec{.name = group + "/input_layer1", .direction = 0, .f = 16, .format = 2, .sys_index = 1,
                       .scale = 1.0f / 255});
  add_edge(g, EdgeSpec{.name = group + "/fc1", .direction = 1, .f = 10, .pf = 16, .format = 2, .scale = 0.5f,
                       .zero_point = 3.0f});
  return f;
}

}  // namespace aisrv::test::hef
