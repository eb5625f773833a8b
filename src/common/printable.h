// Text that came from users (names, values, and messages that echo them) on its way to a
// terminal, a log or a page. Control characters become visible escapes, so a crafted value can
// neither rewrite an admin's terminal (ESC and BEL sequences), nor cut a line short (NUL), nor
// forge lines of its own. The CLI's error output and every log line pass through here; the
// validators escape the values they echo the same way.
#pragma once

#include <string>
#include <string_view>

namespace hpc {

// Every control character (C0 and DEL) escaped: "\n", "\r", "\t", the others as "\xNN".
// The result is one line.
std::string Printable(std::string_view text);

// The same, keeping newlines and tabs: for messages that are several lines by design.
std::string PrintableLines(std::string_view text);

}  // namespace hpc
