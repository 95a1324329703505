// aisrv flash — the FlashDevice contract checks (bounds, alignment, NOR program rule) and geometry helpers.
#include "aisrv/flash/device.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>

namespace aisrv::flash {

namespace {

constexpr size_t kCheckChunk = 256 * 1024;  // program check reads old contents in pieces of this size

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::string format_size(uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{} {}", v, units[u]);
}

std::string describe(const Geometry& g) {
  return fmt::format("{}, {} erase blocks, {}-byte writes", format_size(g.size), format_size(g.erase_block),
                     g.write_size);
}

Status validate(const Geometry& g) {
  if (!is_pow2(g.erase_block))
    return make_error(Errc::invalid_argument, "erase-block size {} is not a power of two", g.erase_block);
  if (!is_pow2(g.write_size))
    return make_error(Errc::invalid_argument, "write size {} is not a power of two", g.write_size);
  if (g.write_size > g.erase_block)
    return make_error(Errc::invalid_argument, "write size {} is larger than the erase block {}", g.write_size,
                      g.erase_block);
  if (g.size == 0 || g.size % g.erase_block != 0)
    return make_error(Errc::invalid_argument, "device size {} is not a positive multiple of the erase block {}",
                      g.size, g.erase_block);
  return ok();
}

Result<uint64_t> parse_size(std::string_view text) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return make_error(Errc::invalid_argument, "size '{}' is too large", text);
    v = v * 10 + d;
    ++i;
  }
  if (i == 0) return make_error(Errc::invalid_argument, "size '{}' does not start with a number", text);
  std::string suffix(text.substr(i));
  for (auto& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k" || suffix == "kib" || suffix == "kb") shift = 10;
  else if (suffix == "m" || suffix == "mib" || suffix == "mb") shift = 20;
  else if (suffix == "g" || suffix == "gib" || suffix == "gb") shift = 30;
  else return make_error(Errc::invalid_argument, "size '{}': unknown unit '{}' (use K, M or G)", text, suffix);
  if (shift && v > (UINT64_MAX >> shift)) return make_error(Errc::invalid_argument, "size '{}' is too large", text);
  v <<= shift;
  if (v == 0) return make_error(Errc::invalid_argument, "size '{}' is zero", text);
  return v;
}

bool programmable_over(std::span<const uint8_t> old, std::span<const uint8_t> data, size_t* first_bad) {
  const size_t n = std::min(old.size(), data.size());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t o, d;
    std::memcpy(&o, old.data() + i, 8);
    std::memcpy(&d, data.data() + i, 8);
    if ((~o & d) != 0) break;  // locate the byte below
  }
  for (; i < n; ++i) {
    if ((~old[i] & data[i]) & 0xFF) {
      if (first_bad) *first_bad = i;
      return false;
    }
  }
  return true;
}

FlashDevice::FlashDevice(const Geometry& g) : geometry_(g) {
  clean_from_.assign(static_cast<size_t>(g.block_count()), g.erase_block);  // nothing known erased yet
}

void FlashDevice::forget_erased_state() { std::fill(clean_from_.begin(), clean_from_.end(), geometry_.erase_block); }

Status FlashDevice::check_range(const char* op, uint64_t offset, uint64_t length) const {
  if (offset > geometry_.size || length > geometry_.size - offset)
    return make_error(Errc::flash_error, "{} of {} bytes at 0x{:x} is outside the device ({} bytes)", op, length,
                      offset, geometry_.size);
  return ok();
}

Status FlashDevice::read(uint64_t offset, std::span<uint8_t> out) {
  AISRV_TRY(check_range("read", offset, out.size()));
  if (out.empty()) return ok();
  return do_read(offset, out);
}

Status FlashDevice::program(uint64_t offset, std::span<const uint8_t> data) {
  AISRV_TRY(check_range("program", offset, data.size()));
  const uint32_t ws = geometry_.write_size;
  if (offset % ws != 0 || data.size() % ws != 0)
    return make_error(Errc::flash_error,
                      "program of {} bytes at 0x{:x} is not aligned to the {}-byte write granularity", data.size(),
                      offset, ws);
  if (data.empty()) return ok();
  // NOR rule: check everything before writing anything, so a refused program leaves the device unchanged. Bytes
  // known to be erased need no check (anything can be programmed over 0xFF).
  const uint32_t eb = geometry_.erase_block;
  for (size_t done = 0; done < data.size();) {
    const uint64_t at = offset + done;
    const uint64_t block = at / eb;
    const uint64_t in_block = at % eb;
    const size_t n = static_cast<size_t>(std::min<uint64_t>({kCheckChunk, data.size() - done, eb - in_block}));
    if (in_block < clean_from_[block]) {
      scratch_.resize(n);
      AISRV_TRY(do_read(at, scratch_));
      size_t bad = 0;
      if (!programmable_over(scratch_, data.subspan(done, n), &bad))
        return make_error(Errc::flash_error,
                          "program at 0x{:x} would set bits from 0 to 1 (stored 0x{:02x}, new 0x{:02x}): the range "
                          "must be erased first",
                          at + bad, scratch_[bad], data[done + bad]);
    }
    done += n;
  }
  // Until the program succeeded the bytes are in an unknown state.
  const uint64_t first = offset / eb, last = (offset + data.size() - 1) / eb;
  std::vector<uint32_t> before(clean_from_.begin() + static_cast<long>(first),
                               clean_from_.begin() + static_cast<long>(last) + 1);
  for (uint64_t b = first; b <= last; ++b) clean_from_[b] = eb;
  AISRV_TRY(do_program(offset, data));
  for (uint64_t b = first; b <= last; ++b) {
    const uint64_t end_in_block = std::min<uint64_t>(offset + data.size() - b * eb, eb);
    clean_from_[b] = static_cast<uint32_t>(std::max<uint64_t>(before[b - first], end_in_block));
  }
  return ok();
}

Status FlashDevice::erase(uint64_t offset, uint64_t length) {
  AISRV_TRY(check_range("erase", offset, length));
  const uint32_t eb = geometry_.erase_block;
  if (offset % eb != 0 || length % eb != 0)
    return make_error(Errc::flash_error, "erase of {} bytes at 0x{:x} does not cover whole {}-byte erase blocks",
                      length, offset, eb);
  if (length == 0) return ok();
  for (uint64_t b = offset / eb; b < (offset + length) / eb; ++b) clean_from_[b] = eb;  // unknown until done
  AISRV_TRY(do_erase(offset, length));
  for (uint64_t b = offset / eb; b < (offset + length) / eb; ++b) clean_from_[b] = 0;
  return ok();
}

std::span<const uint8_t> FlashDevice::view(uint64_t offset, uint64_t length) {
  if (offset > geometry_.size || length > geometry_.size - offset || length == 0) return {};
  return do_view(offset, length);
}

namespace {
bool all_ff(std::span<const uint8_t> b) {
  size_t i = 0;
  for (; i + 8 <= b.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, b.data() + i, 8);
    if (w != ~uint64_t{0}) return false;
  }
  for (; i < b.size(); ++i)
    if (b[i] != 0xFF) return false;
  return true;
}
}  // namespace

Result<bool> FlashDevice::is_erased(uint64_t offset, uint64_t length) {
  AISRV_TRY(check_range("read", offset, length));
  if (length == 0) return true;
  // Whole blocks this object erased and has not programmed since are known erased.
  const uint32_t eb = geometry_.erase_block;
  const bool whole_blocks = offset % eb == 0 && length % eb == 0;
  if (whole_blocks) {
    bool known = true;
    for (uint64_t b = offset / eb; b < (offset + length) / eb && known; ++b) known = clean_from_[b] == 0;
    if (known) return true;
  }
  // A whole block seen to be erased is remembered as such (the program check then needs no read).
  auto remember = [&](bool erased) {
    if (erased && whole_blocks)
      for (uint64_t b = offset / eb; b < (offset + length) / eb; ++b) clean_from_[b] = 0;
    return erased;
  };
  if (const auto v = do_view(offset, length); !v.empty()) return remember(all_ff(v));
  // Small first piece: written flash usually differs from 0xFF within its first bytes.
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(length, kCheckChunk)));
  size_t piece_size = 4096;
  for (uint64_t done = 0; done < length;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>({buf.size(), length - done, piece_size}));
    std::span<uint8_t> piece(buf.data(), n);
    AISRV_TRY(do_read(offset + done, piece));
    if (!all_ff(piece)) return false;
    done += n;
    piece_size = buf.size();
  }
  return remember(true);
}

}  // namespace aisrv::flash
