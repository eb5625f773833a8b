// The web console's files (web/console), compiled into the binary by cmake/embed_assets.cmake:
// the server needs nothing from disk or the network to serve them.
#pragma once

#include <cstddef>
#include <string>

namespace hpc::cp {

struct ConsoleAsset {
  const char* data;
  size_t size;
  const char* content_type;
};

// The file `name` (e.g. "app.js"), or null.
const ConsoleAsset* FindConsoleAsset(const std::string& name);

}  // namespace hpc::cp
