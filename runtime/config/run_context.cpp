#include "runtime/config/run_context.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "kernels/task/kernelbench_checkout.hpp"
#include "kernels/task/task_loader.hpp"

namespace crucible::runtime {

namespace fs = std::filesystem;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

expected<config> load_run_config(const std::string& run_dir, const std::vector<std::string>& overrides) {
  std::string path = run_dir + "/config.yaml";
  if (!fs::exists(path))
    return make_error("'" + run_dir + "' is not a run directory (no config.yaml to resume)");
  std::vector<std::string> all = {"run.dir=" + run_dir};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_config(path, all);
}

namespace {

kernelbench_task_loader& kernelbench_loader() {
  static kernelbench_task_loader loader;
  return loader;
}

bool listed(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string task_dir_of(const config& cfg) {
  return cfg.tasks.dir.empty() ? kernels::default_task_dir() : cfg.tasks.dir;
}

// tasks.include / tasks.exclude.
bool wanted_by(const config& cfg, const std::string& name) {
  return (cfg.tasks.include.empty() || listed(cfg.tasks.include, name)) && !listed(cfg.tasks.exclude, name);
}

}  // namespace

void set_kernelbench_task_loader(kernelbench_task_loader loader) {
  kernelbench_loader() = std::move(loader);
}

expected<std::vector<std::string>> select_task_names(const config& cfg) {
  std::vector<std::string> names;
  if (!cfg.tasks.kernelbench_dir.empty()) {
    auto problems =
        kernels::scan_kernelbench(cfg.tasks.kernelbench_dir, static_cast<int>(cfg.tasks.kernelbench_level));
    if (!problems) return make_error("tasks.kernelbench_dir: " + problems.message());
    for (const auto& p : *problems) names.push_back(p.task_name());
  } else {
    auto suite = kernels::load_task_suite(task_dir_of(cfg), cfg.target);
    if (!suite) return make_error("tasks.dir: " + suite.message());
    for (const auto& t : *suite) names.push_back(t.name);
  }
  names.erase(std::remove_if(names.begin(), names.end(), [&](const auto& n) { return !wanted_by(cfg, n); }),
              names.end());
  std::sort(names.begin(), names.end());
  return names;
}

expected<std::vector<task_spec>> select_tasks(const config& cfg) {
  auto wanted = [&](const std::string& name) { return wanted_by(cfg, name); };
  expected<std::vector<task_spec>> suite = std::vector<task_spec>{};
  if (!cfg.tasks.kernelbench_dir.empty()) {
    if (!kernelbench_loader())
      return make_error(
          "tasks.kernelbench_dir: this build has no KernelBench support (it needs python3-dev, "
          "pybind11-dev and python3-torch at configure time)");
    // Only the wanted problems are loaded (each runs its module once): a broken one can be excluded. On the
    // CUDA target they are read on the run's first device, as the benchmarkers will evaluate them.
    const int device =
        cfg.target == "cuda" && !cfg.cuda.devices.empty() ? static_cast<int>(cfg.cuda.devices.front()) : -1;
    suite = kernelbench_loader()(cfg.tasks.kernelbench_dir, static_cast<int>(cfg.tasks.kernelbench_level),
                                 wanted, device);
    if (!suite) return make_error("tasks.kernelbench_dir: " + suite.message());
  } else {
    suite = kernels::load_task_suite(task_dir_of(cfg), cfg.target);
    if (!suite) return make_error("tasks.dir: " + suite.message());
  }
  std::set<std::string> names;
  for (const auto& t : *suite) names.insert(t.name);
  for (const auto& want : cfg.tasks.include)
    if (!names.count(want))
      return make_error("tasks.include: no task named '" + want + "' for target " + cfg.target);
  std::vector<task_spec> out;
  for (auto& t : *suite)
    if (wanted(t.name)) out.push_back(std::move(t));
  if (out.empty()) return make_error("no tasks left to train on (check tasks.include / tasks.exclude)");
  std::sort(out.begin(), out.end(), [](const task_spec& a, const task_spec& b) { return a.name < b.name; });
  return out;
}

expected<std::shared_ptr<run_context>> prepare_run(const config& cfg, bool resume) {
  // Everything that can fail on the config alone fails before the run directory is touched: a typo in
  // tasks.include must not move the previous run aside.
  auto tasks = select_tasks(cfg);
  if (!tasks) return tasks.err();
  auto ctx = std::make_shared<run_context>();
  ctx->cfg = cfg;
  ctx->resume = resume;
  ctx->start_unix = unix_now();
  std::error_code ec;
  fs::path dir = fs::absolute(cfg.run.dir, ec);
  if (ec) return make_error("run.dir '" + cfg.run.dir + "': " + ec.message());
  ctx->dir = dir.lexically_normal().string();
  if (!ctx->dir.empty() && ctx->dir.back() == '/') ctx->dir.pop_back();
  // A staged run keeps its runs under stages/ (runtime/pipeline/training_stages).
  bool has_run = fs::exists(dir / "metrics.jsonl") || fs::exists(dir / "replay.sqlite") ||
                 fs::exists(dir / "stages.json") || fs::exists(dir / "stages");
  if (resume && !has_run) return make_error("--resume: '" + ctx->dir + "' holds no run to resume");
  if (!resume && has_run) {
    // A finished or interrupted run is never overwritten silently; the old one moves aside.
    fs::path aside = dir.string() + ".prev-" + std::to_string(static_cast<long long>(unix_now()));
    fs::rename(dir, aside, ec);
    if (ec)
      return make_error("run.dir '" + ctx->dir +
                        "' holds a run and could not be moved aside: " + ec.message());
  }
  fs::create_directories(dir / "checkpoints", ec);
  if (ec) return make_error("cannot create run directory '" + ctx->dir + "': " + ec.message());
  // The sections' paths inside the run directory (the compile cache, the worker log).
  for (const auto& schema : config_section_schemas())
    if (schema.bind_run)
      if (auto st = schema.bind_run(ctx->cfg.sections.slot(schema), ctx->dir); !st) return st.err();

  int incarnation = 0;
  if (resume) {
    while (fs::exists(dir / ("config.resume-" + std::to_string(incarnation + 1) + ".yaml"))) ++incarnation;
    ++incarnation;
    std::ofstream(dir / ("config.resume-" + std::to_string(incarnation) + ".yaml")) << to_yaml(ctx->cfg);
  } else {
    std::ofstream(dir / "config.yaml") << to_yaml(ctx->cfg);
  }
  ctx->incarnation = "r" + std::to_string(incarnation);

  ctx->tasks = std::move(*tasks);
  for (const auto& t : ctx->tasks) ctx->task_by_name[t.name] = t;
  return ctx;
}

}  // namespace crucible::runtime
