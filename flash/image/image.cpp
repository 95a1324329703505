// aisrv flash — offline image creation and inspection (library behind `aisrv flash-image`).
#include "aisrv/flash/image.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "aisrv/flash/file_device.hpp"

namespace aisrv::flash {

namespace {

Result<uint32_t> parse_client(std::string_view text, std::string_view whole) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size())
    return make_error(Errc::invalid_argument, "'{}': client '{}' is not a number", whole, text);
  return v;
}

Result<std::vector<uint8_t>> read_whole(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return make_error(Errc::invalid_argument, "cannot read {}: {}", p.string(), std::strerror(errno));
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error(Errc::invalid_argument, "error reading {}", p.string());
  return b;
}

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

uint64_t free_bytes_of(const ModelStore& store) {
  const auto& sb = store.superblock();
  uint64_t used = 0;
  for (const auto& e : store.list())
    for (const Slot& s : e.slots)
      if (s.used()) used += s.extent_length;
  const uint64_t area = sb.data_end() - sb.data_begin();
  return used > area ? 0 : area - used;
}

}  // namespace

bool ImageReport::ok() const {
  for (const auto& c : clients)
    for (const auto& s : c.slots)
      if (s.problem) return false;
  return true;
}

Result<ImageModel> parse_model_arg(std::string_view arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos || eq + 1 == arg.size())
    return make_error(Errc::invalid_argument, "--model '{}': expected CLIENT=FILE, e.g. 0=model.tflite", arg);
  ImageModel m;
  m.client = AISRV_TRY(parse_client(arg.substr(0, eq), arg));
  m.file = std::string(arg.substr(eq + 1));
  return m;
}

Result<std::pair<uint32_t, std::string>> parse_name_arg(std::string_view arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos)
    return make_error(Errc::invalid_argument, "--name '{}': expected CLIENT=NAME", arg);
  const uint32_t c = AISRV_TRY(parse_client(arg.substr(0, eq), arg));
  std::string name(arg.substr(eq + 1));
  AISRV_TRY(format::validate_name(name));
  return std::pair{c, name};
}

ImageReport inspect_store(ModelStore& store) {
  ImageReport r;
  r.device = store.device().name();
  r.geometry = store.device().geometry();
  r.superblock = store.superblock();
  r.journal = store.journal_stats();
  r.notes = store.notes();
  r.free_bytes = free_bytes_of(store);
  for (const auto& e : store.list()) {
    ClientReport c{e.client, e.seq, {}};
    for (uint8_t pass = 0; pass < 2; ++pass)
      for (uint8_t s = 0; s < 2; ++s) {
        const bool active = e.active == s;
        if (!e.slots[s].used() || (pass == 0) != active) continue;
        SlotReport sr{s, active, e.slots[s], std::nullopt};
        if (auto v = store.verify(e.client, s); !v) sr.problem = v.error();
        c.slots.push_back(std::move(sr));
      }
    if (!c.slots.empty()) r.clients.push_back(std::move(c));
  }
  return r;
}

Result<ImageReport> create_image(const CreateImageOptions& o) {
  AISRV_TRY(validate(o.geometry));
  std::set<uint32_t> seen;
  for (const auto& m : o.models) {
    if (m.client >= o.clients)
      return make_error(Errc::invalid_argument, "--model for client {}: the image has clients 0..{} (--clients)",
                        m.client, o.clients - 1);
    if (!seen.insert(m.client).second)
      return make_error(Errc::invalid_argument, "client {} is given two models", m.client);
  }
  // Read every input before touching the output.
  struct Input {
    const ImageModel* m;
    std::vector<uint8_t> model, params;
    std::string name;
  };
  std::vector<Input> inputs;
  for (const auto& m : o.models) {
    Input in{&m, AISRV_TRY(read_whole(m.file)), {}, m.name};
    if (m.parameters) in.params = AISRV_TRY(read_whole(*m.parameters));
    if (in.name.empty()) {
      in.name = m.file.stem().string();
      if (in.name.size() > kMaxNameBytes) in.name.resize(kMaxNameBytes);
    }
    if (auto v = format::validate_name(in.name); !v)
      return make_error(Errc::invalid_argument, "client {}: {}", m.client, v.error().message);
    if (in.model.empty()) return make_error(Errc::invalid_argument, "{} is empty", m.file.string());
    inputs.push_back(std::move(in));
  }
  std::error_code ec;
  if (std::filesystem::exists(o.out, ec)) {
    if (!o.overwrite)
      return make_error(Errc::invalid_argument, "{} exists (use --force to replace it)", o.out.string());
    std::filesystem::remove(o.out, ec);
    if (ec) return make_error(Errc::io_error, "cannot remove {}: {}", o.out.string(), ec.message());
  }
  auto build = [&]() -> Result<ImageReport> {
    auto dev = AISRV_TRY(FileFlash::create(o.out, o.geometry));
    auto store = AISRV_TRY(ModelStore::format(*dev, FormatOptions{o.clients}));
    for (const auto& in : inputs) {
      auto e = store->write_model(in.m->client, in.name, in.model, in.params);
      if (!e) return make_error(e.error().code, "client {} ({}): {}", in.m->client, in.m->file.string(),
                                e.error().message);
    }
    return inspect_store(*store);
  };
  auto r = build();
  if (!r) std::filesystem::remove(o.out, ec);
  return r;
}

Result<ImageReport> inspect_image(std::string_view spec, const OpenOptions& options) {
  OpenOptions ro = options;
  ro.read_only = true;
  ro.create = false;
  ro.format_blank = false;
  auto opened = AISRV_TRY(open_store(spec, ro));
  return inspect_store(*opened.store);
}

std::string render_text(const ImageReport& r) {
  const auto& sb = r.superblock;
  std::string s;
  s += fmt::format("{}: aisrv model store {}.{}, {}\n", r.device, sb.major, sb.minor, describe(r.geometry));
  s += fmt::format("layout: superblock block 0, journal blocks {} and {}, data blocks {}..{} ({}), {} clients\n",
                   sb.journal_block[0], sb.journal_block[1], sb.data_first_block,
                   sb.data_first_block + sb.data_block_count - 1, format_size(sb.data_end() - sb.data_begin()),
                   sb.clients);
  for (int j = 0; j < 2; ++j) {
    const auto& b = r.journal.blocks[j];
    s += fmt::format("journal {}{}: {} generation {}, {}/{} records used ({} intact, {} unreadable)\n", j,
                     r.journal.active == j ? " (active)" : "", b.header_valid ? "header ok," : "no header,",
                     b.generation, b.used, b.capacity, b.intact, b.unreadable);
  }
  s += fmt::format("free: {} bytes\n", r.free_bytes);
  if (r.clients.empty()) s += "no models stored\n";
  for (const auto& c : r.clients) {
    for (const auto& sl : c.slots) {
      const Slot& i = sl.info;
      s += fmt::format("client {} slot {} {:8} '{}' {} {} bytes xxh64 {} seq {} at 0x{:x}{}: {}\n", c.client,
                       slot_letter(sl.slot), sl.active ? "active" : "previous", i.name, model_format_name(i.format),
                       i.model_size(), hex64(i.model_hash()), i.seq, i.extent_offset,
                       i.segment(SegmentKind::parameters).length
                           ? fmt::format(", parameters {} bytes", i.segment(SegmentKind::parameters).length)
                           : std::string(),
                       sl.problem ? "CORRUPT (" + sl.problem->message + ")" : std::string("verified"));
    }
  }
  for (const auto& n : r.notes) s += fmt::format("note: {}\n", n);
  return s;
}

nlohmann::json render_json(const ImageReport& r) {
  const auto& sb = r.superblock;
  nlohmann::json j;
  j["device"] = r.device;
  j["format"] = fmt::format("{}.{}", sb.major, sb.minor);
  j["size"] = r.geometry.size;
  j["erase_block"] = r.geometry.erase_block;
  j["write_size"] = r.geometry.write_size;
  j["clients"] = sb.clients;
  j["data_bytes"] = sb.data_end() - sb.data_begin();
  j["free_bytes"] = r.free_bytes;
  j["journal"] = nlohmann::json::array();
  for (int b = 0; b < 2; ++b) {
    const auto& jb = r.journal.blocks[b];
    j["journal"].push_back({{"erase_block", jb.erase_block},
                            {"active", r.journal.active == b},
                            {"header_valid", jb.header_valid},
                            {"generation", jb.generation},
                            {"capacity", jb.capacity},
                            {"used", jb.used},
                            {"intact", jb.intact},
                            {"unreadable", jb.unreadable}});
  }
  j["models"] = nlohmann::json::array();
  for (const auto& c : r.clients)
    for (const auto& sl : c.slots) {
      const Slot& i = sl.info;
      nlohmann::json m{{"client", c.client},
                       {"slot", std::string(1, slot_letter(sl.slot))},
                       {"active", sl.active},
                       {"name", i.name},
                       {"format", std::string(model_format_name(i.format))},
                       {"size", i.model_size()},
                       {"xxh64", hex64(i.model_hash())},
                       {"seq", i.seq},
                       {"offset", i.extent_offset},
                       {"extent", i.extent_length},
                       {"parameters", i.segment(SegmentKind::parameters).length},
                       {"verified", !sl.problem}};
      if (sl.problem) m["problem"] = sl.problem->message;
      j["models"].push_back(std::move(m));
    }
  j["notes"] = r.notes;
  j["ok"] = r.ok();
  return j;
}

}  // namespace aisrv::flash
