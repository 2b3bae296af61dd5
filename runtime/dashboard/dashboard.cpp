#include "runtime/dashboard/dashboard.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "runtime/cluster/control_client.hpp"
#include "runtime/dashboard/http_server.hpp"
#include "runtime/dashboard/prometheus_text.hpp"
#include "runtime/dashboard/web_assets.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::runtime {

namespace {

constexpr size_t max_source_chars = 64 * 1024;  // a kernel's source as the page shows it
constexpr int64_t recent_hacks = 20;

nlohmann::json candidate_json(const scored_candidate& c, bool with_source) {
  nlohmann::json j = {{"id", c.cand.id},
                      {"task", c.cand.task},
                      {"policy_version", c.cand.policy_version},
                      {"language", c.cand.language},
                      {"outcome", c.judged.outcome},
                      {"speedup", c.judged.speedup},
                      {"speedup_vs_graph", c.bench.speedup_vs_graph},
                      {"flags", c.judged.flags},
                      {"evidence", c.judged.evidence},
                      {"notes", c.bench.notes}};
  if (with_source) {
    const bool cut = c.cand.source.size() > max_source_chars;
    j["source"] = cut ? c.cand.source.substr(0, max_source_chars) +
                            "\n/* ... cut at 64 KiB; crucible show has it all */"
                      : c.cand.source;
  }
  return j;
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

// The host part of a Host header ("127.0.0.1:8265", "[::1]:8265", "localhost").
std::string host_of(const std::string& header) {
  if (!header.empty() && header.front() == '[') return header.substr(1, header.find(']') - 1);
  return header.substr(0, header.find(':'));
}

// A page reached by a name other than an address or localhost is refused: a DNS name that resolves to this
// host at an attacker's wish (DNS rebinding) must not let another site's script read the run.
bool host_allowed(const std::string& header) {
  const std::string h = host_of(header);
  if (h.empty() || h == "localhost") return true;
  return std::all_of(
             h.begin(), h.end(),
             [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == ':'; }) &&
         std::any_of(h.begin(), h.end(), [](char c) { return c == '.' || c == ':'; });
}

http_response json_response(int status, const nlohmann::json& j) {
  http_response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = j.dump();
  return r;
}

http_response text_response(int status, const std::string& text) {
  http_response r;
  r.status = status;
  r.body = text;
  return r;
}

}  // namespace

std::string make_dashboard_token() {
  std::random_device rd;
  std::string out;
  char hex[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(hex, sizeof hex, "%08x", rd());
    out += hex;
  }
  return out;
}

struct dashboard::impl {
  dashboard_options options;
  dashboard_sources sources;
  std::unique_ptr<http_server> server;
  std::string note;

  // The sample every client reads, replaced by the sampler thread.
  std::mutex mu;
  std::condition_variable changed;
  uint64_t version = 0;
  nlohmann::json state = nlohmann::json::object();  // status, outcomes, best, hacks, run
  std::vector<std::string> metric_rows;             // metrics.jsonl's lines (JSON objects), in order
  run_sample last;
  std::atomic<bool> stopping{false};
  std::thread sampler;

  std::streamoff metrics_offset = 0;
  int64_t glanced_scored = -1;
  int ticks = 0;

  // New complete lines of metrics.jsonl since the last read (a resumed run may rewrite it: then all again).
  std::vector<std::string> read_new_metrics() {
    std::vector<std::string> rows;
    const std::string path = options.run_dir + "/metrics.jsonl";
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return rows;
    if (static_cast<std::streamoff>(size) < metrics_offset) metrics_offset = 0;
    std::ifstream in(path, std::ios::binary);
    in.seekg(metrics_offset);
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t from = 0;
    for (size_t nl; (nl = chunk.find('\n', from)) != std::string::npos; from = nl + 1) {
      std::string line = chunk.substr(from, nl - from);
      if (!line.empty() && nlohmann::json::accept(line)) rows.push_back(std::move(line));
    }
    metrics_offset += static_cast<std::streamoff>(from);
    return rows;
  }

  void sample() {
    run_sample s;
    s.cuda = options.cuda;
    if (auto st = sources.status()) s.status = std::move(*st);
    auto rows = read_new_metrics();
    nlohmann::json glance;
    const std::string db = options.run_dir + "/replay.sqlite";
    // The database is read when something was scored since, and at least every tenth sample.
    const bool glance_now =
        (s.status.candidates_scored != glanced_scored || ticks++ % 10 == 0) && std::filesystem::exists(db);
    if (glance_now) {
      if (auto g = replay_store::glance(db, recent_hacks)) {
        glanced_scored = s.status.candidates_scored;
        glance["outcomes"] = g->outcomes;
        glance["best"] = nlohmann::json::array();
        for (const auto& c : g->best) glance["best"].push_back(candidate_json(c, true));
        glance["hacks"] = nlohmann::json::array();
        for (const auto& c : g->recent_hacks) glance["hacks"].push_back(candidate_json(c, true));
        s.outcomes = g->outcomes;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    if (!glance_now) s.outcomes = last.outcomes;
    last = s;
    state["status"] = status_json(s.status);
    state["busy"] = benchmarker_busy(s.status);
    for (auto& [k, v] : glance.items()) state[k] = v;
    state["run"] = {{"dir", options.run_dir},
                    {"cuda", options.cuda},
                    {"controls", options.controls},
                    {"scalable_roles", options.scalable_roles},
                    {"refresh_s", options.refresh.count() / 1000.0}};
    for (auto& r : rows) metric_rows.push_back(std::move(r));
    ++version;
    changed.notify_all();
  }

  void sample_loop() {
    while (!stopping.load()) {
      try {
        sample();
      } catch (const std::exception& e) {
        spdlog::warn("dashboard: a sample failed: {}", e.what());
      }
      std::unique_lock<std::mutex> lock(mu);
      changed.wait_for(lock, options.refresh, [&] { return stopping.load(); });
    }
  }

  nlohmann::json rows_json(size_t from) {
    nlohmann::json a = nlohmann::json::array();
    for (size_t i = from; i < metric_rows.size(); ++i) a.push_back(nlohmann::json::parse(metric_rows[i]));
    return a;
  }

  http_response scale(const http_request& req) {
    if (!options.controls)
      return json_response(403, {{"error",
                                  "the dashboard is read-only: dashboard.controls is off (set it to on, "
                                  "or configure cluster keys, to scale from the page)"}});
    auto sent = req.headers.find("x-crucible-token");
    if (sent == req.headers.end() || !constant_time_equal(sent->second, options.token))
      return json_response(401, {{"error",
                                  "a command needs the run's token (the #token=... of the URL printed at "
                                  "start, or RUN_DIR/dashboard_token)"}});
    if (auto origin = req.headers.find("origin"); origin != req.headers.end()) {
      // A browser names the page that sent it: only this dashboard's own page may command it.
      const std::string o = origin->second;
      const auto host = req.headers.find("host");
      if (host == req.headers.end() || o != "http://" + host->second)
        return json_response(403,
                             {{"error", "a command from another site's page (Origin " + o + ") is refused"}});
    }
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("role") || !body["role"].is_string() ||
        !body.contains("count") || !body["count"].is_number_integer())
      return json_response(400, {{"error", "expected {\"role\": ROLE, \"count\": N}"}});
    control c;
    c.command = "scale";
    c.role = body["role"].get<std::string>();
    const auto count = body["count"].get<int64_t>();
    if (count < 0 || count > (1 << 20)) return json_response(400, {{"error", "count: expected 0 or more"}});
    c.count = static_cast<int32_t>(count);
    c.args["timeout_s"] = "10";
    spdlog::info("dashboard: scale {} to {} (from {})", c.role, c.count, req.peer_address);
    status_report r = sources.control(c, {req.peer_address, ""});
    if (!r.error.empty()) return json_response(409, {{"error", r.error}});
    return json_response(200, {{"status", status_json(r)}});
  }

  http_response stream(const http_request&) {
    http_response r;
    r.stream = [this](event_sink& sink) {
      uint64_t seen = 0;
      size_t rows_sent = 0;
      std::string state_sent;
      while (!stopping.load()) {
        std::string state_text, rows_text;
        {
          std::unique_lock<std::mutex> lock(mu);
          changed.wait_for(lock, std::chrono::milliseconds(200),
                           [&] { return version != seen || stopping.load(); });
          if (version == seen) {
            lock.unlock();
            if (!sink.wait(std::chrono::milliseconds(0))) return;
            continue;
          }
          seen = version;
          state_text = state.dump();
          if (rows_sent < metric_rows.size()) {
            rows_text = rows_json(rows_sent).dump();
            rows_sent = metric_rows.size();
          }
        }
        if (state_text != state_sent && !sink.send("state", state_text)) return;
        state_sent = std::move(state_text);
        if (!rows_text.empty() && !sink.send("metrics", rows_text)) return;
      }
    };
    return r;
  }

  http_response handle(const http_request& req) {
    if (auto host = req.headers.find("host"); host == req.headers.end() || !host_allowed(host->second))
      return text_response(403, "refused: the dashboard answers to an IP address or localhost only\n");
    const bool get = req.method == "GET" || req.method == "HEAD";
    if (req.path == "/api/scale") {
      if (req.method != "POST") return text_response(405, "POST a JSON object {\"role\": R, \"count\": N}\n");
      return scale(req);
    }
    if (!get) return text_response(405, "method not allowed\n");
    if (req.path == "/" || req.path == "/index.html") {
      const web_asset* page = find_web_asset("index.html");
      http_response r;
      r.content_type = page->content_type;
      r.body.assign(reinterpret_cast<const char*>(page->data), page->size);
      r.headers.push_back(
          {"Content-Security-Policy",
           "default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:"});
      return r;
    }
    if (req.path.rfind("/assets/", 0) == 0) {
      const web_asset* a = find_web_asset(req.path.substr(8));
      if (!a) return text_response(404, "no asset " + req.path + "\n");
      http_response r;
      r.content_type = a->content_type;
      r.body.assign(reinterpret_cast<const char*>(a->data), a->size);
      return r;
    }
    if (req.path == "/api/state") {
      std::lock_guard<std::mutex> lock(mu);
      return json_response(200, {{"state", state}, {"metrics", rows_json(0)}});
    }
    if (req.path == "/api/events") return stream(req);
    if (req.path == "/metrics") {
      run_sample s;
      {
        std::lock_guard<std::mutex> lock(mu);
        s = last;
      }
      http_response r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = prometheus_text(s);
      return r;
    }
    return text_response(404, "not found: " + req.path + "\n");
  }
};

expected<std::unique_ptr<dashboard>> dashboard::start(dashboard_options options, dashboard_sources sources) {
  auto m = std::make_unique<impl>();
  m->options = std::move(options);
  m->sources = std::move(sources);
  impl* raw = m.get();
  http_server_options http;
  http.listen = m->options.listen;
  auto handler = [raw](const http_request& req) { return raw->handle(req); };
  auto server = http_server::start(http, handler);
  if (!server && m->options.any_port_if_taken) {
    auto where = parse_listen(m->options.listen);
    if (where) {
      http.listen =
          (where->first.find(':') != std::string::npos ? "[" + where->first + "]" : where->first) + ":0";
      server = http_server::start(http, handler);
      if (server)
        m->note = "dashboard: " + m->options.listen + " is taken (another run?), so port " +
                  std::to_string((*server)->port()) + " serves this one";
    }
  }
  if (!server) return make_error("dashboard.listen: " + server.message());
  m->server = std::move(*server);
  m->sample();  // the first request finds numbers
  m->sampler = std::thread([raw] { raw->sample_loop(); });
  return std::unique_ptr<dashboard>(new dashboard(std::move(m)));
}

dashboard::dashboard(std::unique_ptr<impl> impl) : impl_(std::move(impl)) {}

dashboard::~dashboard() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping.store(true);
  }
  impl_->changed.notify_all();
  if (impl_->sampler.joinable()) impl_->sampler.join();
  impl_->server.reset();  // ends the streams and joins their threads
}

std::string dashboard::url() const {
  std::string host = impl_->server->host();
  if (host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  std::string u = "http://" + host + ":" + std::to_string(impl_->server->port()) + "/";
  if (impl_->options.controls) u += "#token=" + impl_->options.token;
  return u;
}

const std::string& dashboard::note() const {
  return impl_->note;
}

}  // namespace crucible::runtime
