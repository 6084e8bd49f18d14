#include <kjudge/core/text.hpp>

#include <gtest/gtest.h>

TEST(text, a_figure_beside_another_reads_differently_where_they_differ) {
  EXPECT_EQ(kj::figure_beside(0.7123, 0.5), "0.712");
  EXPECT_EQ(kj::figure_beside(0.50032, 0.5), "0.5003");
  EXPECT_EQ(kj::figure_beside(0.5, 0.5), "0.5");
  EXPECT_EQ(kj::figure_beside(0.4999, 0.5), "0.4999");
  EXPECT_EQ(kj::figure_beside(12.3456, 12.3), "12.35");
}

TEST(text, listed_names_the_first_and_counts_the_rest) {
  EXPECT_EQ(kj::listed({}, 3, ", "), "");
  EXPECT_EQ(kj::listed({"a", "b"}, 3, ", "), "a, b");
  EXPECT_EQ(kj::listed({"a", "b", "c"}, 3, "; "), "a; b; c");
  EXPECT_EQ(kj::listed({"a", "b", "c", "d", "e"}, 2, ", "), "a, b, and 3 more");
}

TEST(text, terminal_safe_line_keeps_a_path_on_one_line) {
  // A problem named with a newline split the report's header and a usage error's line.
  EXPECT_EQ(kj::terminal_safe_line("new\nline\tand \x1b[31mred.py"),
            "new\\x0aline\\x09and \\x1b[31mred.py");
  EXPECT_EQ(kj::terminal_safe_line("µs – ✓.py"), "µs – ✓.py");
}

TEST(text, terminal_safe_text_shows_control_characters_instead_of_acting_on_them) {
  using kj::terminal_safe;
  EXPECT_EQ(terminal_safe("plain text, tabs\tand\nnewlines"), "plain text, tabs\tand\nnewlines");
  EXPECT_EQ(terminal_safe("\x1b[31mred\x07"), "\\x1b[31mred\\x07");
  EXPECT_EQ(terminal_safe(std::string("a\0b\rc\x7f", 6)), "a\\x00b\\x0dc\\x7f");
  // UTF-8 stays; C1 controls in UTF-8 (U+009B, CSI) and bytes that are not UTF-8 do not.
  EXPECT_EQ(terminal_safe("µs – ✓ 😀"), "µs – ✓ 😀");
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\u009b2J");
  EXPECT_EQ(terminal_safe("bin\xff\xfe end"), "bin\\xff\\xfe end");
  EXPECT_EQ(terminal_safe("\x9b"
                          "2J"),
            "\\x9b2J");                                         // a stray continuation byte
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(terminal_safe("cut \xe2\x9c"), "cut \\xe2\\x9c");   // cut short
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  // The edges of the ranges.
  EXPECT_EQ(terminal_safe("\xe0\x80\x80"), "\\xe0\\x80\\x80");           // overlong, 3 bytes
  EXPECT_EQ(terminal_safe("\xf0\x8f\xbf\xbf"), "\\xf0\\x8f\\xbf\\xbf");  // overlong, 4 bytes
  EXPECT_EQ(terminal_safe("\xed\x9f\xbf"), "\xed\x9f\xbf");              // U+D7FF
  EXPECT_EQ(terminal_safe("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf");      // U+10FFFF
  EXPECT_EQ(terminal_safe("\xc2\xa0"), "\xc2\xa0");                      // U+00A0, past C1
  EXPECT_EQ(terminal_safe("end \xf0\x9f\x98"), "end \\xf0\\x9f\\x98");   // 4 bytes cut short
  // Bidirectional overrides and isolates reorder the line: shown, not applied.
  EXPECT_EQ(terminal_safe("ok \xe2\x80\xaeverdict"), "ok \\u202everdict");
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
  EXPECT_EQ(terminal_safe("\xe2\x80\x94 \xe2\x80\xa9"),
            "\xe2\x80\x94 \xe2\x80\xa9");  // dash, U+2029
}

TEST(text, a_duration_reads_with_the_digits_it_needs) {
  EXPECT_EQ(kj::seconds_text(30.0), "30.0 s");
  EXPECT_EQ(kj::seconds_text(1.0), "1.0 s");
  EXPECT_EQ(kj::seconds_text(0.996), "1.0 s");
  EXPECT_EQ(kj::seconds_text(0.31), "0.31 s");
  EXPECT_EQ(kj::seconds_text(0.1), "0.10 s");
  // Below a tenth of a second, milliseconds: a 20 ms limit read "after 0.0 s".
  EXPECT_EQ(kj::seconds_text(0.045), "45 ms");
  EXPECT_EQ(kj::seconds_text(0.0004), "0.4 ms");
  EXPECT_EQ(kj::seconds_text(0.0), "0 ms");
}
