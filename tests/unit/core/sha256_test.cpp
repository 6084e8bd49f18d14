#include <kjudge/core/sha256.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <kjudge/core/error.hpp>

namespace {

// Vectors from NIST's "SHA-256 examples" (FIPS 180-4 / SHAVS short and long messages).
TEST(sha256, nist_vectors) {
  EXPECT_EQ(kj::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(kj::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(kj::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(kj::sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmn"
                           "opjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(sha256, one_million_a_fed_in_uneven_chunks) {
  kj::sha256 h;
  const std::string chunk(997, 'a');  // prime length: chunks straddle every block boundary
  std::size_t left = 1'000'000;
  while (left > 0) {
    const std::size_t n = std::min(left, chunk.size());
    h.update(std::string_view(chunk.data(), n));
    left -= n;
  }
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Padding edge cases: 55 bytes is the longest message whose length fits in the last block, 56
// needs an extra block, 64 fills one block exactly.
TEST(sha256, padding_boundaries) {
  const std::pair<std::size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (const auto& [length, digest] : cases)
    EXPECT_EQ(kj::sha256_hex(std::string(length, 'a')), digest) << "length " << length;
}

TEST(sha256, incremental_equals_one_shot_for_every_split) {
  std::string text;
  for (int i = 0; i < 150; ++i) text.push_back(static_cast<char>('!' + (i * 7) % 90));
  const std::string whole = kj::sha256_hex(text);
  for (std::size_t split = 0; split <= text.size(); ++split) {
    kj::sha256 h;
    h.update(std::string_view(text).substr(0, split));
    h.update(std::as_bytes(std::span(text.data() + split, text.size() - split)));
    EXPECT_EQ(h.hex(), whole) << "split at " << split;
  }
}

TEST(sha256, finish_gives_the_bytes_that_hex_spells) {
  kj::sha256 h;
  h.update("abc");
  const auto digest = h.finish();
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[1], 0x78);
  EXPECT_EQ(digest[31], 0xad);
}

TEST(sha256, file_hash_matches_text_hash) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("kj_sha256_test_" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".bin");
  std::string content(100'000, '\0');
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 31 % 251);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  EXPECT_EQ(kj::sha256_file(path), kj::sha256_hex(content));
  std::filesystem::remove(path);
}

TEST(sha256, unreadable_file_throws_io_error) {
  const std::filesystem::path missing = "/nonexistent/kjudge/definitely_missing.cu";
  try {
    (void)kj::sha256_file(missing);
    FAIL() << "expected kj::error";
  } catch (const kj::error& e) {
    EXPECT_EQ(e.kind(), kj::error_kind::io);
    EXPECT_NE(e.message().find("definitely_missing.cu"), std::string::npos) << e.message();
  }
  try {
    (void)kj::sha256_file(std::filesystem::temp_directory_path());
    FAIL() << "expected kj::error for a directory";
  } catch (const kj::error& e) {
    EXPECT_EQ(e.kind(), kj::error_kind::io);
  }
}

}  // namespace
