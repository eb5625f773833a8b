#include "common/printable.h"

#include <fmt/format.h>

namespace hpc {
namespace {

std::string Escape(std::string_view text, bool keep_lines) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (keep_lines && (c == '\n' || c == '\t')) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string Printable(std::string_view text) { return Escape(text, false); }

std::string PrintableLines(std::string_view text) { return Escape(text, true); }

}  // namespace hpc
