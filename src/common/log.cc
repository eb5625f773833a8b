#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "common/printable.h"

namespace hpc::log {
namespace {

// `%*`: the message with its control characters escaped (common/printable.h). Log lines echo
// names and values from users; a newline in one must not forge a line, nor an ESC reach the
// terminal of whoever reads the log.
class PrintableMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string text = Printable(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<PrintableMessage>(); }
};

void SetPattern(spdlog::logger& logger, const std::string& pattern) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PrintableMessage>('*').set_pattern(pattern);
  logger.set_formatter(std::move(formatter));
}

}  // namespace

void InitConsole(bool verbose) {
  auto logger = spdlog::stderr_color_mt("hpcplane");
  SetPattern(*logger, "%^%l%$: %*");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

void UseServiceFormat() {
  auto logger = spdlog::default_logger();
  SetPattern(*logger, "[%Y-%m-%dT%H:%M:%S.%e] [%l] %*");
  if (logger->level() > spdlog::level::info) logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
}

void InitFile(const std::string& path, bool verbose) {
  auto logger = spdlog::basic_logger_mt("hpcplane", path);
  SetPattern(*logger, "[%Y-%m-%dT%H:%M:%S.%e] [%l] %*");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace hpc::log
