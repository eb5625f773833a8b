#include "slurm/json_filter.h"

#include <vector>

namespace hpc::slurm {
namespace {

using nlohmann::json;

class FilteringSax : public nlohmann::json_sax<json> {
 public:
  FilteringSax(int depth, const std::set<std::string>& kept) : depth_(depth), kept_(kept) {}

  json Take() { return failed_ ? json(json::value_t::discarded) : std::move(root_); }

  bool null() override { return Add(json(nullptr)); }
  bool boolean(bool v) override { return Add(json(v)); }
  bool number_integer(number_integer_t v) override { return Add(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Add(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Add(json(v)); }
  bool string(string_t& v) override { return Add(json(std::move(v))); }
  bool binary(binary_t& v) override { return Add(json::binary(std::move(v))); }

  bool start_object(std::size_t) override { return Open(json::object()); }
  bool start_array(std::size_t) override { return Open(json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& k) override {
    if (skipping_ > 0) return true;
    skip_next_ = static_cast<int>(open_.size()) == depth_ && !kept_.count(k);
    key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    failed_ = true;
    return false;
  }

 private:
  // Places a finished value where the parse is: the root, an array's end, or the last key.
  json* Place(json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }
  bool Add(json v) {
    if (skipping_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    Place(std::move(v));
    return true;
  }
  bool Open(json empty) {
    if (skipping_ > 0 || skip_next_) {
      skip_next_ = false;
      ++skipping_;
      return true;
    }
    open_.push_back(Place(std::move(empty)));
    return true;
  }
  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    open_.pop_back();
    return true;
  }

  const int depth_;
  const std::set<std::string>& kept_;
  json root_;
  std::vector<json*> open_;  // containers being filled; pointers stay valid as only the last grows
  std::string key_;
  bool skip_next_ = false;  // the value of the last key is not wanted
  int skipping_ = 0;        // nesting inside an unwanted value
  bool failed_ = false;
};

}  // namespace

nlohmann::json ParseKeeping(const std::string& text, int depth, const std::set<std::string>& kept) {
  FilteringSax sax(depth, kept);
  if (!json::sax_parse(text, &sax)) return json(json::value_t::discarded);
  return sax.Take();
}

}  // namespace hpc::slurm
