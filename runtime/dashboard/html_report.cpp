#include "runtime/dashboard/html_report.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/dashboard/web_assets.hpp"
#include "runtime/storage/run_report.hpp"

namespace crucible::runtime {
namespace {

// Script text inside <script>: a "</script" anywhere, even in a string, would end the element early.
std::string script_safe(std::string text) {
  for (size_t at = 0; (at = text.find("</", at)) != std::string::npos; at += 3) text.replace(at, 2, "<\\/");
  return text;
}

std::string html_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// JSON inside <script>: '<' appears only in strings, where \u003c means the same and opens no tag.
std::string json_in_script(const std::string& json) {
  std::string out;
  for (char c : json) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

}  // namespace

expected<std::string> html_report(const std::string& run_dir) {
  auto report = make_run_report(run_dir);
  if (!report) return report.err();
  nlohmann::json rows = nlohmann::json::array();
  std::ifstream in(run_dir + "/metrics.jsonl");
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return make_error(run_dir + "/metrics.jsonl: line " + std::to_string(n) + " is not a JSON object");
    rows.push_back(std::move(j));
  }
  nlohmann::json data = {{"report", nlohmann::json::parse(run_report_json(*report))}, {"metrics", rows}};
  std::string html =
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Crucible report: " +
      html_escaped(report->dir) + "</title>\n<style>\n" + web_asset_text("uPlot.min.css") + "\n" +
      web_asset_text("dashboard.css") + "\n</style>\n</head>\n<body>\n<header><h1>Crucible report</h1>" +
      "<span class=\"muted\">" + html_escaped(report->dir) +
      "</span></header>\n<main id=\"report\"></main>\n";
  for (const char* script : {"uPlot.iife.min.js", "charts.js"})
    html += "<script>\n" + script_safe(web_asset_text(script)) + "\n</script>\n";
  html += "<script>\nwindow.CRUCIBLE_REPORT = " +
          json_in_script(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
          ";\n</script>\n<script>\n" + script_safe(web_asset_text("report.js")) +
          "\n</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace crucible::runtime
