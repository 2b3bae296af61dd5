#include "runtime/hosting/logging.hpp"

#include <memory>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace crucible::runtime {

void init_logging(const std::string& level, const std::string& file, bool quiet_terminal) {
  std::vector<spdlog::sink_ptr> sinks;
  auto term = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto lvl = spdlog::level::from_str(level);
  term->set_level(quiet_terminal ? std::max(lvl, spdlog::level::warn) : lvl);
  term->set_pattern("[%H:%M:%S] %^%l%$ %v");
  sinks.push_back(term);
  if (!file.empty()) {
    auto f = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, false);
    f->set_level(lvl);
    f->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] [t%t] %v");
    sinks.push_back(f);
  }
  auto logger = std::make_shared<spdlog::logger>("crucible", sinks.begin(), sinks.end());
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  spdlog::flush_every(std::chrono::seconds(2));
}

}  // namespace crucible::runtime
