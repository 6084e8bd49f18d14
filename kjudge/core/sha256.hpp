#pragma once
/** @file SHA-256, for content hashes of problems, candidates and build-cache keys. */

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace kj {

/** Incremental SHA-256 (FIPS 180-4). */
class sha256 {
 public:
  sha256() noexcept;
  void update(std::span<const std::byte> data) noexcept;
  void update(std::string_view text) noexcept;
  /** Finishes and returns the digest; the object must not be updated afterwards. */
  [[nodiscard]] std::array<std::uint8_t, 32> finish() noexcept;
  /** Finishes and returns the digest as 64 lowercase hex characters. */
  [[nodiscard]] std::string hex() noexcept;

 private:
  void block(const std::uint8_t* p) noexcept;
  std::array<std::uint32_t, 8> m_state;
  std::array<std::uint8_t, 64> m_buffer{};
  std::size_t m_buffered = 0;
  std::uint64_t m_length = 0;  // bytes
};

[[nodiscard]] std::string sha256_hex(std::string_view text);
/** Hash of a file's bytes; throws kj::error(io) when it cannot be read. */
[[nodiscard]] std::string sha256_file(const std::filesystem::path& path);

}  // namespace kj
