#include "runtime/dashboard/dashboard.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/dashboard/web_assets.hpp"
#include "runtime/storage/metrics_log.hpp"
#include "runtime/storage/replay_store.hpp"
#include "tests/runtime/dashboard/raw_http.hpp"

namespace crucible::runtime {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace testing;

scored_candidate candidate(const std::string& id, const std::string& task, const std::string& outcome,
                           double speedup) {
  scored_candidate s;
  s.cand.id = id;
  s.cand.task = task;
  s.cand.source = "// kernel " + id + "\n";
  s.judged.outcome = outcome;
  s.judged.speedup = speedup;
  if (outcome == "hack") {
    s.judged.flags = {"input_mutated"};
    s.judged.evidence = {"input_mutated:x"};
  }
  return s;
}

// A run directory with three steps of metrics and a replay database: two tasks, a hack among them.
struct fixture_run {
  fs::path dir = fs::temp_directory_path() / ("crucible-dashboard-" + std::to_string(::getpid()));
  fixture_run() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (int step = 1; step <= 3; ++step) add_step(step);
    auto store = replay_store::open((dir / "replay.sqlite").string(), {}, 1);
    EXPECT_TRUE(store);
    scored_group g;
    g.group_id = "g0";
    g.task = "softmax";
    g.members = {candidate("c0", "softmax", "pass", 1.5), candidate("c1", "softmax", "pass", 2.5),
                 candidate("c2", "softmax", "hack", 0)};
    EXPECT_TRUE(store->insert(g));
    g.group_id = "g1";
    g.task = "layer_norm";
    g.members = {candidate("c3", "layer_norm", "pass", 0.8), candidate("c4", "layer_norm", "incorrect", 0)};
    EXPECT_TRUE(store->insert(g));
  }
  ~fixture_run() { fs::remove_all(dir); }
  void add_step(int step) {
    step_metrics m;
    m.step = step;
    m.reward_mean = 0.5 * step;
    m.wall_s = 10.0 * step;
    append_metrics((dir / "metrics.jsonl").string(), m);
  }
};

// The run's side: a status that moves, and a control path that records what it was asked.
struct fake_run {
  std::mutex mu;
  status_report status;
  std::vector<std::pair<control, control_origin>> commands;
  std::string refuse;  // an error the head answers with
  fake_run() {
    status.step = 3;
    status.reward_mean = 1.5;
    status.candidates_scored = 5;
    status.roles = {{"benchmarker", 1, 1, 0, 4}, {"compiler", 2, 0, 1, 0}};
    status.rejected = {{"malformed", 2}};
    status.speedup_best = {{"softmax", 2.5}, {"la\"yer", 0.8}};
  }
  dashboard_sources sources() {
    dashboard_sources s;
    s.status = [this]() -> expected<status_report> {
      std::lock_guard<std::mutex> lock(mu);
      return status;
    };
    s.control = [this](const control& c, const control_origin& o) {
      std::lock_guard<std::mutex> lock(mu);
      commands.emplace_back(c, o);
      status_report r = status;
      r.error = refuse;
      if (refuse.empty())
        for (auto& rs : r.roles)
          if (rs.role == c.role) rs.actors = c.count;
      return r;
    };
    return s;
  }
};

struct board {
  fixture_run run;
  fake_run fake;
  std::unique_ptr<dashboard> d;
  uint16_t port = 0;
  explicit board(bool controls) {
    dashboard_options o;
    o.controls = controls;
    o.token = "secret-token";
    o.run_dir = run.dir.string();
    o.scalable_roles = {"benchmarker", "compiler"};
    o.refresh = 100ms;
    auto started = dashboard::start(o, fake.sources());
    EXPECT_TRUE(started) << started.message();
    d = std::move(*started);
    const std::string url = d->url();
    port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  }
  std::string scale(const std::string& body, const std::string& token, const std::string& extra = "") {
    return request(port, "POST", "/api/scale", "X-Crucible-Token: " + token + "\r\n" + extra, body);
  }
};

TEST(Dashboard, TheStateHoldsStatusBestKernelsHacksAndMetrics) {
  board b(false);
  const std::string r = request(b.port, "GET", "/api/state");
  ASSERT_EQ(status_of(r), 200) << r;
  auto j = nlohmann::json::parse(body_of(r));
  const auto& st = j["state"];
  EXPECT_EQ(st["status"]["step"], 3);
  EXPECT_EQ(st["status"]["roles"]["benchmarker"]["queued"], 4);
  EXPECT_EQ(st["outcomes"]["pass"], 3);
  EXPECT_EQ(st["outcomes"]["hack"], 1);
  ASSERT_EQ(st["best"].size(), 2u) << "one per task, tasks in name order";
  EXPECT_EQ(st["best"][0]["task"], "layer_norm");
  EXPECT_EQ(st["best"][1]["id"], "c1") << "the fastest pass of its task";
  EXPECT_EQ(st["best"][1]["source"], "// kernel c1\n");
  ASSERT_EQ(st["hacks"].size(), 1u);
  EXPECT_EQ(st["hacks"][0]["flags"][0], "input_mutated");
  EXPECT_EQ(st["hacks"][0]["evidence"][0], "input_mutated:x");
  ASSERT_EQ(j["metrics"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["metrics"][2]["reward_mean"].get<double>(), 1.5);
  EXPECT_FALSE(st["run"]["controls"].get<bool>());
}

TEST(Dashboard, ServesThePageAndItsLibrariesWithoutANetwork) {
  board b(false);
  const std::string page = request(b.port, "GET", "/");
  EXPECT_EQ(status_of(page), 200);
  EXPECT_NE(page.find("Content-Security-Policy: default-src 'self'"), std::string::npos);
  EXPECT_NE(body_of(page).find("/assets/dashboard.js"), std::string::npos);
  for (const char* asset :
       {"dashboard.js", "charts.js", "dashboard.css", "uPlot.iife.min.js", "uPlot.min.css"}) {
    const std::string r = request(b.port, "GET", std::string("/assets/") + asset);
    EXPECT_EQ(status_of(r), 200)
        << asset << " (uPlot is vendored at configure time by runtime/dashboard/web/vendor.sh)";
    EXPECT_GT(body_of(r).size(), 500u) << asset;
  }
  EXPECT_EQ(status_of(request(b.port, "GET", "/assets/nothing.js")), 404);
  EXPECT_EQ(status_of(request(b.port, "GET", "/nowhere")), 404);
  EXPECT_EQ(status_of(request(b.port, "DELETE", "/api/state")), 405);
}

// DNS rebinding: another site's name resolving to this host must not let its scripts read the run.
TEST(Dashboard, AnswersOnlyToAnAddressOrLocalhost) {
  board b(false);
  EXPECT_EQ(status_of(send_raw(
                b.port, "GET /api/state HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n")),
            403);
  EXPECT_EQ(status_of(send_raw(b.port, "GET /api/state HTTP/1.1\r\nConnection: close\r\n\r\n")), 403);
  EXPECT_EQ(status_of(send_raw(b.port,
                               "GET /api/state HTTP/1.1\r\nHost: localhost:1\r\nConnection: close\r\n\r\n")),
            200);
  EXPECT_EQ(
      status_of(send_raw(b.port, "GET /api/state HTTP/1.1\r\nHost: [::1]:1\r\nConnection: close\r\n\r\n")),
      200);
}

TEST(Dashboard, AReadOnlyDashboardRefusesEveryCommand) {
  board b(false);
  const std::string r = b.scale(R"({"role": "benchmarker", "count": 2})", "secret-token");
  EXPECT_EQ(status_of(r), 403);
  EXPECT_NE(body_of(r).find("dashboard.controls"), std::string::npos) << r;
  EXPECT_TRUE(b.fake.commands.empty());
}

TEST(Dashboard, AScaleNeedsTheTokenAndThisPageAndGoesThroughTheControlPath) {
  board b(true);
  EXPECT_NE(b.d->url().find("#token=secret-token"), std::string::npos);
  const std::string body = R"({"role": "benchmarker", "count": 2})";
  EXPECT_EQ(status_of(b.scale(body, "wrong-token")), 401);
  EXPECT_EQ(status_of(request(b.port, "POST", "/api/scale", "", body)), 401);
  EXPECT_EQ(status_of(b.scale(body, "secret-token", "Origin: http://evil.example.com\r\n")), 403);
  EXPECT_EQ(status_of(b.scale("{not json", "secret-token")), 400);
  EXPECT_EQ(status_of(b.scale(R"({"role": "benchmarker", "count": -1})", "secret-token")), 400);
  EXPECT_EQ(status_of(b.scale(R"({"role": "benchmarker", "count": "2"})", "secret-token")), 400);
  EXPECT_EQ(status_of(request(b.port, "GET", "/api/scale")), 405);
  EXPECT_TRUE(b.fake.commands.empty()) << "nothing refused reached the run";

  const std::string own_origin = "Origin: http://127.0.0.1:" + std::to_string(b.port) + "\r\n";
  const std::string ok = b.scale(body, "secret-token", own_origin);
  ASSERT_EQ(status_of(ok), 200) << ok;
  EXPECT_EQ(nlohmann::json::parse(body_of(ok))["status"]["roles"]["benchmarker"]["actors"], 2);
  ASSERT_EQ(b.fake.commands.size(), 1u);
  EXPECT_EQ(b.fake.commands[0].first.command, "scale");
  EXPECT_EQ(b.fake.commands[0].first.role, "benchmarker");
  EXPECT_EQ(b.fake.commands[0].first.count, 2);
  EXPECT_EQ(b.fake.commands[0].second.address, "127.0.0.1") << "the policy sees where the command came from";

  b.fake.refuse = "scale verifier: no such role";
  const std::string refused = b.scale(R"({"role": "verifier", "count": 3})", "secret-token");
  EXPECT_EQ(status_of(refused), 409);
  EXPECT_NE(body_of(refused).find("no such role"), std::string::npos);
}

TEST(Dashboard, MetricsParseWithThePrometheusClientsOwnParser) {
  board b(false);
  const std::string r = request(b.port, "GET", "/metrics");
  ASSERT_EQ(status_of(r), 200);
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const fs::path file = b.run.dir / "metrics.txt";
  std::ofstream(file) << body_of(r);
  const std::string cmd = "/usr/bin/python3 " CRUCIBLE_TEST_DATA_DIR
                          "/../runtime/dashboard/parse_prometheus.py " +
                          file.string() + " 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ASSERT_EQ(::pclose(p), 0) << out << "\n(scripts/install_deps installs python3-prometheus-client)";
  }
  auto j = nlohmann::json::parse(out);
  auto value = [&](const std::string& family, const std::string& label, const std::string& is) {
    for (const auto& s : j[family]["samples"])
      if (label.empty() || s[1].value(label, "") == is) return s[2].get<double>();
    ADD_FAILURE() << "no sample " << family << "{" << label << "=" << is << "}";
    return -1.0;
  };
  EXPECT_EQ(j["crucible_candidates"]["type"], "counter");
  EXPECT_EQ(value("crucible_candidates", "outcome", "pass"), 3);
  EXPECT_EQ(value("crucible_candidates", "outcome", "hack"), 1);
  EXPECT_EQ(value("crucible_queue_depth", "role", "benchmarker"), 4);
  EXPECT_EQ(value("crucible_actors", "role", "compiler"), 2);
  EXPECT_EQ(value("crucible_learner_steps", "", ""), 3);
  EXPECT_EQ(value("crucible_reward_mean", "", ""), 1.5);
  EXPECT_EQ(value("crucible_rejected_frames", "reason", "malformed"), 2);
  EXPECT_EQ(value("crucible_rejected_frames", "reason", "auth_denied"), 0);
  EXPECT_EQ(value("crucible_speedup_best", "task", "la\"yer"), 0.8) << "label values are escaped";
  EXPECT_EQ(value("crucible_benchmarker_busy_ratio", "", ""), 1.0);
  EXPECT_EQ(j["crucible_reward_mean"]["type"], "gauge");
}

TEST(Dashboard, TheEventStreamSendsTheStateAndEachNewStep) {
  board b(false);
  const int fd = connect_loopback(b.port);
  const std::string req = "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string got = read_from(fd, 5s, "event: metrics");
  EXPECT_NE(got.find("event: state\ndata: {"), std::string::npos) << got;
  EXPECT_NE(got.find("event: metrics\n"), std::string::npos) << got;
  {
    std::lock_guard<std::mutex> lock(b.fake.mu);
    b.fake.status.step = 4;
  }
  b.run.add_step(4);
  got = read_from(fd, 5s, "\"step\":4");
  EXPECT_NE(got.find("\"step\":4"), std::string::npos) << "the new step reached the page: " << got;
  ::close(fd);
}

TEST(Dashboard, ADefaultPortThatIsTakenGivesWayToAFreeOne) {
  board first(false);
  fake_run fake;
  dashboard_options o;
  o.listen = "127.0.0.1:" + std::to_string(first.port);
  o.run_dir = first.run.dir.string();
  auto strict = dashboard::start(o, fake.sources());
  ASSERT_FALSE(strict) << "a port the config names is the user's choice: taken is an error";
  EXPECT_NE(strict.message().find("dashboard.listen"), std::string::npos);
  o.any_port_if_taken = true;
  auto second = dashboard::start(o, fake.sources());
  ASSERT_TRUE(second) << second.message();
  EXPECT_NE((*second)->note().find("is taken"), std::string::npos);
  EXPECT_EQ((*second)->url().find("http://127.0.0.1:" + std::to_string(first.port) + "/"), std::string::npos);
}

}  // namespace
}  // namespace crucible::runtime
