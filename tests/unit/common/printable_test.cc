#include "common/printable.h"

#include <gtest/gtest.h>

namespace hpc {
namespace {

// A terminal's title sequence, a bell, a NUL and a forged line all come out as visible escapes.
TEST(PrintableTest, EscapesEveryControlCharacter) {
  const std::string hostile = std::string("a\x1b]0;pwned\ab") + '\0' + "c\nd\re\tf\x7fg";
  EXPECT_EQ(Printable(hostile), "a\\x1b]0;pwned\\x07b\\x00c\\nd\\re\\tf\\x7fg");
  for (unsigned char c : Printable(hostile)) EXPECT_FALSE(c < 0x20 || c == 0x7f) << int(c);
}

// Multi-line messages keep their lines and tabs; everything else is escaped as above.
TEST(PrintableTest, PrintableLinesKeepsNewlinesAndTabs) {
  EXPECT_EQ(PrintableLines("one\n\ttwo\x1b[2J\r"), "one\n\ttwo\\x1b[2J\\r");
}

// Text without control characters, UTF-8 included, passes unchanged.
TEST(PrintableTest, LeavesOrdinaryTextAlone) {
  EXPECT_EQ(Printable("cluster \"prod-1\": ü, 日本"), "cluster \"prod-1\": ü, 日本");
}

}  // namespace
}  // namespace hpc
