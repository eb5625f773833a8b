// Reading a Kubernetes object's members in place. nlohmann's `value(key, default)` returns a copy
// of the member: for a pod, whose metadata carries its whole spec in an annotation, kilobytes a
// read. The operator reads every cached pod several times a pass; with 1,000 workers such copies
// were most of a 0.7-second pass (bench/README.md, "Operator at 1,000 workers").
#pragma once

#include <nlohmann/json.hpp>

namespace hpc::runtime::kubernetes {

// The member `key` of `object`; a null (which iterates as empty) when absent or `object` is not
// an object.
inline const nlohmann::json& Member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNone;
  if (!object.is_object()) return kNone;
  auto it = object.find(key);
  return it == object.end() ? kNone : *it;
}

}  // namespace hpc::runtime::kubernetes
