#include <kjudge/core/sha256.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <kjudge/core/error.hpp>

namespace kj {

namespace {

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
// first 64 primes.
constexpr std::array<std::uint32_t, 64> round_constants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// FIPS 180-4 section 5.3.3: the first 32 bits of the fractional parts of the square roots of the
// first 8 primes.
constexpr std::array<std::uint32_t, 8> initial_state = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

std::uint32_t load_be32(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

sha256::sha256() noexcept : m_state(initial_state) {}

void sha256::block(const std::uint8_t* p) noexcept {
  std::array<std::uint32_t, 64> w;
  for (std::size_t t = 0; t < 16; ++t) w[t] = load_be32(p + 4 * t);
  for (std::size_t t = 16; t < 64; ++t) {
    const std::uint32_t s0 = std::rotr(w[t - 15], 7) ^ std::rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const std::uint32_t s1 = std::rotr(w[t - 2], 17) ^ std::rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  std::uint32_t a = m_state[0], b = m_state[1], c = m_state[2], d = m_state[3];
  std::uint32_t e = m_state[4], f = m_state[5], g = m_state[6], h = m_state[7];
  for (std::size_t t = 0; t < 64; ++t) {
    const std::uint32_t big_s1 = std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25);
    const std::uint32_t ch = (e & f) ^ (~e & g);
    const std::uint32_t t1 = h + big_s1 + ch + round_constants[t] + w[t];
    const std::uint32_t big_s0 = std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22);
    const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const std::uint32_t t2 = big_s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  m_state[0] += a;
  m_state[1] += b;
  m_state[2] += c;
  m_state[3] += d;
  m_state[4] += e;
  m_state[5] += f;
  m_state[6] += g;
  m_state[7] += h;
}

void sha256::update(std::span<const std::byte> data) noexcept {
  const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
  std::size_t left = data.size();
  m_length += left;
  if (m_buffered > 0) {
    const std::size_t take = std::min(left, m_buffer.size() - m_buffered);
    std::memcpy(m_buffer.data() + m_buffered, p, take);
    m_buffered += take;
    p += take;
    left -= take;
    if (m_buffered < m_buffer.size()) return;
    block(m_buffer.data());
    m_buffered = 0;
  }
  for (; left >= 64; p += 64, left -= 64) block(p);
  if (left > 0) {
    std::memcpy(m_buffer.data(), p, left);
    m_buffered = left;
  }
}

void sha256::update(std::string_view text) noexcept {
  update(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

std::array<std::uint8_t, 32> sha256::finish() noexcept {
  // Padding (FIPS 180-4 section 5.1.1): a 1 bit, zeros up to 56 mod 64 bytes, then the message
  // length in bits as a 64-bit big-endian integer.
  const std::uint64_t bits = m_length * 8;
  m_buffer[m_buffered++] = 0x80;
  if (m_buffered > 56) {
    std::fill(m_buffer.begin() + static_cast<std::ptrdiff_t>(m_buffered), m_buffer.end(),
              std::uint8_t{0});
    block(m_buffer.data());
    m_buffered = 0;
  }
  std::fill(m_buffer.begin() + static_cast<std::ptrdiff_t>(m_buffered), m_buffer.begin() + 56,
            std::uint8_t{0});
  for (std::size_t i = 0; i < 8; ++i)
    m_buffer[56 + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
  block(m_buffer.data());
  m_buffered = 0;

  std::array<std::uint8_t, 32> digest;
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      digest[4 * i + j] = static_cast<std::uint8_t>(m_state[i] >> (24 - 8 * j));
  return digest;
}

std::string sha256::hex() noexcept {
  static constexpr char digits[] = "0123456789abcdef";
  const auto digest = finish();
  std::string out(64, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = digits[digest[i] >> 4];
    out[2 * i + 1] = digits[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view text) {
  sha256 h;
  h.update(text);
  return h.hex();
}

std::string sha256_file(const std::filesystem::path& path) {
  // An ifstream opens a directory on Linux and then reads it as empty; refuse it explicitly.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    KJ_THROW(error_kind::io, "cannot hash {}: it is a directory", path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in)
    KJ_THROW(error_kind::io, "cannot open {} for hashing: {}", path.string(), std::strerror(errno));
  sha256 h;
  std::array<char, 1 << 16> chunk;
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got > 0) h.update(std::string_view(chunk.data(), got));
  }
  if (in.bad()) KJ_THROW(error_kind::io, "error while reading {} for hashing", path.string());
  return h.hex();
}

}  // namespace kj
