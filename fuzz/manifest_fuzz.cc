// libFuzzer target: the manifest decoder (YAML and JSON, every document kind) and what `get -o
// yaml` prints of what it accepted, which must decode again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "api/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto m = hpc::api::DecodeManifest(text, "fuzz.yaml");
  if (!m.ok()) return 0;
  for (const auto& ns : m->nodesets) {
    const std::string yaml = hpc::api::JsonToYaml(hpc::api::ToJson(ns));
    auto again = hpc::api::DecodeManifest(yaml, "again.yaml");
    if (!again.ok()) {  // an accepted object must survive its own output
      std::fprintf(stderr, "round trip failed: %s\n%s\n", again.status().message().c_str(), yaml.c_str());
      std::abort();
    }
  }
  return 0;
}
