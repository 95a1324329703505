// aisrv CPU engine — metadata of a TFLite model from the zip archive appended to it (see model_metadata.hpp).
#include "model_metadata.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>

#include <zlib.h>

namespace aisrv::engine::cpu {

namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kCentralDirectoryEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndRecordBytes = 22, kEntryBytes = 46, kLocalBytes = 30;
constexpr size_t kMaxMembers = 64;

uint32_t u16_at(std::span<const uint8_t> b, size_t at) { return b[at] | (uint32_t{b[at + 1]} << 8); }
uint32_t u32_at(std::span<const uint8_t> b, size_t at) { return u16_at(b, at) | (u16_at(b, at + 2) << 16); }

// Inflates a raw deflate stream of exactly `size` bytes when it decodes; nullopt otherwise.
std::optional<std::string> inflate_member(std::span<const uint8_t> data, size_t size) {
  if (size > kMaxMemberBytes) return std::nullopt;
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return std::nullopt;
  z.next_in = const_cast<Bytef*>(data.data());
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const bool complete = rc == Z_STREAM_END && z.total_out == size;
  inflateEnd(&z);
  if (!complete) return std::nullopt;
  return out;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// A Python string literal ('...' or "...", backslash escapes kept simple) starting at text[pos]; advances pos.
std::optional<std::string> python_string(std::string_view text, size_t& pos) {
  if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"')) return std::nullopt;
  const char quote = text[pos++];
  std::string s;
  while (pos < text.size() && text[pos] != quote) {
    if (text[pos] == '\\' && pos + 1 < text.size()) ++pos;
    s += text[pos++];
  }
  if (pos >= text.size()) return std::nullopt;
  ++pos;
  return s;
}

void skip_spaces(std::string_view text, size_t& pos) {
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
}

// The value of 'key': '...' in a Python dict literal.
std::optional<std::string> python_dict_string(std::string_view text, std::string_view key) {
  for (const char q : {'\'', '"'}) {
    const std::string needle = std::string(1, q) + std::string(key) + std::string(1, q) + ":";
    size_t pos = text.find(needle);
    if (pos == std::string_view::npos) continue;
    pos += needle.size();
    skip_spaces(text, pos);
    return python_string(text, pos);
  }
  return std::nullopt;
}

// 'names': {0: 'person', 1: 'bicycle', ...} in a Python dict literal, as lines in index order ("" for gaps).
std::optional<std::string> python_dict_names(std::string_view text) {
  size_t pos = std::string_view::npos;
  for (std::string_view needle : {"'names':", "\"names\":"})
    if ((pos = text.find(needle)) != std::string_view::npos) {
      pos += needle.size();
      break;
    }
  if (pos == std::string_view::npos) return std::nullopt;
  skip_spaces(text, pos);
  if (pos >= text.size() || text[pos] != '{') return std::nullopt;
  ++pos;
  std::map<long, std::string> names;
  while (true) {
    skip_spaces(text, pos);
    if (pos >= text.size()) return std::nullopt;
    if (text[pos] == '}') break;
    size_t digits = pos;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits == pos || digits - pos > 6) return std::nullopt;
    const long index = std::stol(std::string(text.substr(pos, digits - pos)));
    pos = digits;
    skip_spaces(text, pos);
    if (pos >= text.size() || text[pos] != ':') return std::nullopt;
    ++pos;
    skip_spaces(text, pos);
    auto name = python_string(text, pos);
    if (!name || name->find('\n') != std::string::npos) return std::nullopt;
    names[index] = std::move(*name);
    skip_spaces(text, pos);
    if (pos < text.size() && text[pos] == ',') ++pos;
    if (names.size() > 100000) return std::nullopt;
  }
  if (names.empty() || names.rbegin()->first >= static_cast<long>(names.size()) * 4 + 16) return std::nullopt;
  std::string lines;
  for (long i = 0; i <= names.rbegin()->first; ++i) {
    const auto it = names.find(i);
    lines += (it == names.end() ? std::string() : it->second) + "\n";
  }
  return lines;
}

void add_ultralytics(std::string_view text, MetadataEntries& out) {
  const auto task = python_dict_string(text, "task");
  const auto names = python_dict_names(text);
  if (!task && !names) return;
  out.emplace_back("source", "ultralytics");
  if (task) {
    static const std::pair<std::string_view, std::string_view> kTasks[] = {
        {"detect", "detection"}, {"segment", "segmentation"}, {"pose", "pose"}, {"classify", "classification"},
        {"obb", "obb"}};
    for (const auto& [from, to] : kTasks)
      if (*task == from) out.emplace_back("task", std::string(to));
  }
  if (names) out.emplace_back("labels", *names);
  // Ultralytics feeds RGB pixels / 255, letterboxed (padding 114) for detection, segmentation and pose.
  if (!task || *task != "classify") out.emplace_back("preprocess.fit", "letterbox");
  out.emplace_back("preprocess.mean", "0");
  out.emplace_back("preprocess.std", "255");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> appended_zip_members(std::span<const uint8_t> b) {
  std::vector<std::pair<std::string, std::string>> members;
  if (b.size() < kEndRecordBytes) return members;
  // The end record: the last signature within the final 22 + 65535 bytes whose comment reaches the end exactly.
  const size_t lowest = b.size() > kEndRecordBytes + 65535 ? b.size() - kEndRecordBytes - 65535 : 0;
  size_t end = b.size() - kEndRecordBytes + 1;
  bool found = false;
  while (end-- > lowest) {
    if (u32_at(b, end) == kEndOfCentralDirectory && end + kEndRecordBytes + u16_at(b, end + 20) == b.size()) {
      found = true;
      break;
    }
    if (end == 0) break;
  }
  if (!found) return members;
  const uint32_t count = u16_at(b, end + 10);
  const uint64_t dir_size = u32_at(b, end + 12), dir_offset = u32_at(b, end + 16);
  if (count == 0 || count > kMaxMembers || dir_size > end) return members;
  // Archives appended to another file keep offsets relative to their own start: shift by what precedes it.
  const uint64_t dir_at = end - dir_size;
  if (dir_offset > dir_at) return members;
  const uint64_t base = dir_at - dir_offset;
  uint64_t at = dir_at;
  for (uint32_t i = 0; i < count; ++i) {
    if (at + kEntryBytes > end || u32_at(b, static_cast<size_t>(at)) != kCentralDirectoryEntry) return members;
    const auto e = static_cast<size_t>(at);
    const uint32_t flags = u16_at(b, e + 8), method = u16_at(b, e + 10);
    const uint64_t packed = u32_at(b, e + 20), size = u32_at(b, e + 24);
    const uint32_t name_len = u16_at(b, e + 28), extra_len = u16_at(b, e + 30), comment_len = u16_at(b, e + 32);
    const uint64_t local = base + u32_at(b, e + 42);
    if (at + kEntryBytes + name_len > end) return members;
    std::string name(reinterpret_cast<const char*>(b.data() + e + kEntryBytes), name_len);
    at += kEntryBytes + name_len + extra_len + comment_len;
    if ((flags & 0x1) != 0 || size > kMaxMemberBytes) continue;  // encrypted or too large
    if (local + kLocalBytes > dir_at || u32_at(b, static_cast<size_t>(local)) != kLocalHeader) continue;
    const uint64_t data = local + kLocalBytes + u16_at(b, static_cast<size_t>(local) + 26) +
                          u16_at(b, static_cast<size_t>(local) + 28);
    if (data > dir_at || packed > dir_at - data) continue;
    const auto bytes = b.subspan(static_cast<size_t>(data), static_cast<size_t>(packed));
    if (method == 0 && packed == size) {
      members.emplace_back(std::move(name), std::string(bytes.begin(), bytes.end()));
    } else if (method == 8) {
      if (auto text = inflate_member(bytes, static_cast<size_t>(size)))
        members.emplace_back(std::move(name), std::move(*text));
    }
  }
  return members;
}

MetadataEntries read_model_metadata(std::span<const uint8_t> model) {
  MetadataEntries out;
  for (const auto& [name, text] : appended_zip_members(model)) {
    const std::string n = lower(name);
    if (n == "temp_meta.txt") add_ultralytics(text, out);
    else if (n.find("label") != std::string::npos && n.size() > 4 && n.substr(n.size() - 4) == ".txt" &&
             std::none_of(out.begin(), out.end(), [](const auto& e) { return e.first == "labels"; }))
      out.emplace_back("labels", text);
  }
  return out;
}

}  // namespace aisrv::engine::cpu
