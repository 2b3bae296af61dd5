#include "kernels/reference/task_linter.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>

#include "kernels/reference/output_check.hpp"
#include "kernels/reference/reference_executor.hpp"
#include "kernels/reference/torch_dtypes.hpp"
#include "kernels/task/chain_shapes.hpp"

namespace crucible::kernels {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The elements of a tensor as doubles, whatever its dtype (an argmax's output is int64); the linter works on
// outputs of at most a few million.
std::vector<double> values_of(const host_tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  if (t.dtype() == "float32") {
    std::copy(t.as<float>(), t.as<float>() + t.numel(), out.begin());
  } else if (t.dtype() == "float64") {
    std::copy(t.as<double>(), t.as<double>() + t.numel(), out.begin());
  } else {
    at::from_blob(out.data(), t.shape(), at::kDouble)
        .copy_(at::from_blob(const_cast<void*>(t.data()), t.shape(), scalar_type_of(t.dtype())));
  }
  return out;
}

host_tensor to_float64(const host_tensor& t) {
  host_tensor out("float64", t.shape());
  const auto v = values_of(t);
  std::copy(v.begin(), v.end(), out.as<double>());
  return out;
}

struct output_stats {
  int64_t non_finite = 0;
  double mean_abs = 0.0;
  double std = 0.0;
  double relative_std() const { return std / (mean_abs + 1e-12); }
};

// Over the finite elements only, so one inf does not hide what the rest look like.
output_stats stats_of(const std::vector<double>& v) {
  output_stats s;
  double sum = 0.0, sum_abs = 0.0;
  int64_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) sum += x, sum_abs += std::abs(x), ++n;
  s.non_finite = static_cast<int64_t>(v.size()) - n;
  if (n == 0) return s;
  const double mean = sum / n;
  double var = 0.0;
  for (double x : v)
    if (std::isfinite(x)) var += (x - mean) * (x - mean);
  s.mean_abs = sum_abs / n;
  s.std = std::sqrt(var / n);
  return s;
}

// max |got - want| / (atol + rtol |want|) over elements where both are finite.
double tolerance_use(const std::vector<double>& got, const std::vector<double>& want, double atol,
                     double rtol) {
  double use = 0.0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isfinite(got[i]) && std::isfinite(want[i]))
      use = std::max(use, std::abs(got[i] - want[i]) / (atol + rtol * std::abs(want[i]) + 1e-300));
  return use;
}

const char* variant_name(input_variant v) {
  return v == input_variant::nominal ? "nominal" : "heavy-tailed";
}

// Records each kind of problem once, with the first run it showed up in.
class problem_log {
 public:
  void add(const std::string& kind, const std::string& message) {
    if (kinds_.insert(kind).second) problems_.push_back(message);
  }
  std::vector<std::string> take() { return std::move(problems_); }

 private:
  std::set<std::string> kinds_;
  std::vector<std::string> problems_;
};

// Restores LibTorch's intra-op thread count on scope exit.
class thread_count_guard {
 public:
  explicit thread_count_guard(int threads) : before_(at::get_num_threads()) {
    set_reference_threads(threads);
  }
  ~thread_count_guard() { set_reference_threads(before_); }

 private:
  int before_;
};

// Inputs as any reference draws them (a chain's distributions, a KernelBench module's get_inputs()).
std::vector<host_tensor> draw_inputs(const task_spec& task, const reference_model& ref, uint64_t seed,
                                     input_variant variant) {
  std::vector<host_tensor> inputs;
  std::vector<cru_tensor> views;
  for (const auto& spec : task.inputs) inputs.emplace_back(spec.dtype, spec.shape);
  for (const auto& t : inputs) views.push_back(t.view());
  ref.fill_inputs(views, seed, variant, -1);
  return inputs;
}

void run_model(const reference_model& ref, const std::vector<host_tensor>& inputs, host_tensor& out) {
  std::vector<cru_tensor> views;
  for (const auto& t : inputs) views.push_back(t.view());
  const cru_tensor o = out.view();
  ref.run_views(views, &o, -1);
}

// The checks on outputs, for any reference; `ref64` (the same chain in float64, where there is one) adds the
// tolerance check. Seeds 0 and 1's nominal inputs are left in `nominal_inputs` for timing.
void output_checks(const task_spec& task, const reference_model& ref, const reference_model* ref64,
                   const lint_options& options, lint_report& report, problem_log& problems,
                   std::vector<std::vector<host_tensor>>& nominal_inputs) {
  const double atol = task_atol(task), rtol = task_rtol(task);
  const int seeds = std::max(2, options.seeds);  // input dependence needs two different inputs
  std::vector<host_tensor> nominal_outputs;
  std::vector<double> scalar_values;  // a scalar output's value per seed (nominal inputs)
  for (int seed = 0; seed < seeds; ++seed) {
    for (auto variant : {input_variant::nominal, input_variant::heavy_tailed}) {
      const std::string run = " (seed " + std::to_string(seed) + ", " + variant_name(variant) + " inputs)";
      auto inputs = draw_inputs(task, ref, static_cast<uint64_t>(seed), variant);
      host_tensor out = ref.make_output();
      run_model(ref, inputs, out);
      const auto values = values_of(out);
      const auto s = stats_of(values);
      if (seed == 0 && variant == input_variant::nominal) {
        report.output_std = s.std;
        report.output_mean_abs = s.mean_abs;
      }
      if (s.non_finite > 0)
        problems.add("non-finite",
                     "non-finite output: " + std::to_string(s.non_finite) + " of " +
                         std::to_string(out.numel()) + " elements" + run +
                         "; bound the chain (clamp, tanh) or choose gentler input distributions");
      // A scalar (a loss) has no spread of its own; it is judged across seeds below.
      if (out.numel() > 1 && s.relative_std() < options.min_relative_std)
        problems.add("constant", "near-constant output: std " + fmt("%.3g", s.std) + " vs mean |x| " +
                                     fmt("%.3g", s.mean_abs) + run +
                                     "; a kernel writing a constant would pass the correctness check");
      if (out.numel() == 1 && variant == input_variant::nominal) scalar_values.push_back(values[0]);
      if (ref64) {
        std::vector<host_tensor> inputs64;
        for (const auto& in : inputs) inputs64.push_back(to_float64(in));
        host_tensor out64 = ref64->make_output();
        run_model(*ref64, inputs64, out64);
        const double use = tolerance_use(values, values_of(out64), atol, rtol);
        report.tolerance_use = std::max(report.tolerance_use, use);
        if (use > options.max_tolerance_use)
          problems.add("tolerance", "tolerance too tight: float32 rounding alone uses " + fmt("%.2f", use) +
                                        " of atol + rtol |want|" + run + " (allowed " +
                                        fmt("%.2f", options.max_tolerance_use) +
                                        "); a correct kernel summing in another order would fail");
      }
      if (variant == input_variant::nominal) {
        nominal_outputs.push_back(std::move(out));
        if (seed < 2) nominal_inputs.push_back(std::move(inputs));
      }
    }
  }

  // A scalar output (a loss over many elements concentrates on its expectation) must vary across seeds, or
  // a kernel writing that expectation would pass.
  if (!scalar_values.empty()) {
    const auto s = stats_of(scalar_values);
    report.output_std = s.std;
    report.output_mean_abs = s.mean_abs;
    if (s.relative_std() < options.min_relative_std)
      problems.add("constant", "near-constant scalar output across seeds: std " + fmt("%.3g", s.std) +
                                   " vs mean |x| " + fmt("%.3g", s.mean_abs) + " over " +
                                   std::to_string(scalar_values.size()) +
                                   " seeds; a kernel writing that constant would pass the correctness check");
  }

  // Input dependence: different inputs must give outputs that the correctness check can tell apart.
  const auto& first = nominal_outputs[0];
  if (compare_outputs(nominal_outputs[1], first, atol, rtol).ok)
    problems.add("independent", "output does not depend on the inputs: seeds 0 and 1 agree within tolerance");
  host_tensor zeros = ref.make_output();
  std::memset(zeros.data(), 0, zeros.bytes());
  if (compare_outputs(zeros, first, atol, rtol).ok)
    problems.add("zero", "output is within tolerance of all zeros; a kernel writing zeros would pass");
  // Activations alone must matter: parameters of seed 0, activations of seed 1.
  bool has_param = false, has_activation = false;
  for (const auto& in : task.inputs) (in.param ? has_param : has_activation) = true;
  if (has_param && has_activation) {
    std::vector<host_tensor> mixed;
    for (size_t i = 0; i < task.inputs.size(); ++i)
      mixed.push_back(nominal_inputs[task.inputs[i].param ? 0 : 1][i].clone());
    host_tensor out = ref.make_output();
    run_model(ref, mixed, out);
    if (compare_outputs(out, first, atol, rtol).ok)
      problems.add("independent", "output does not depend on the activations, only on the parameters");
  }
}

void lint_checks(const task_spec& task, const lint_options& options, lint_report& report) {
  auto ref = reference_executor::create(task);
  if (!ref) {
    report.problems.push_back(ref.message());
    return;
  }
  // The same chain in float64, to measure how much of the tolerance rounding alone takes.
  std::optional<reference_executor> ref64;
  if (ref->output_dtype() != "float64") {
    task_spec t64 = task;
    for (auto& in : t64.inputs) in.dtype = "float64";
    if (auto r = reference_executor::create(t64)) ref64.emplace(std::move(*r));
  }
  problem_log problems;
  std::vector<std::vector<host_tensor>> nominal_inputs;
  output_checks(task, *ref, ref64 ? &*ref64 : nullptr, options, report, problems, nominal_inputs);

  // Eager time: single thread, as the timing protocol runs both sides.
  std::vector<double> times;
  {
    thread_count_guard one_thread(1);
    ref->run_timed(nominal_inputs[0]);  // warm-up: allocator, first-touch
    for (int i = 0; i < std::max(1, options.timing_calls); ++i)
      times.push_back(ref->run_timed(nominal_inputs[i % 2]));
  }
  std::sort(times.begin(), times.end());
  report.eager_ms = times[times.size() / 2];
  if (options.min_eager_ms > 0 && report.eager_ms < options.min_eager_ms)
    problems.add("fast", "eager time " + fmt("%.3f", report.eager_ms) + " ms is below min_eager_ms " +
                             fmt("%.3f", options.min_eager_ms) +
                             "; enlarge the shapes so launch overhead does not dominate");

  report.problems = problems.take();
}

}  // namespace

lint_report lint_outputs(const task_spec& task, const reference_model& ref, const lint_options& options) {
  lint_report report;
  report.task = task.name;
  problem_log problems;
  try {
    std::vector<std::vector<host_tensor>> nominal_inputs;
    output_checks(task, ref, nullptr, options, report, problems, nominal_inputs);
    report.problems = problems.take();
  } catch (const std::exception& e) {
    report.problems = problems.take();
    report.problems.push_back(std::string("the reference failed: ") + e.what());
  }
  report.ok = report.problems.empty();
  return report;
}

lint_report lint_task(const task_spec& task, const lint_options& options) {
  lint_report report;
  report.task = task.name;
  try {
    lint_checks(task, options, report);
  } catch (const std::exception& e) {  // LibTorch reports unsupported ops and dtypes by throwing
    report.problems.push_back(std::string("the reference failed: ") + e.what());
  }
  report.ok = report.problems.empty();
  return report;
}

std::string format_task_table(const std::vector<lint_report>& reports, const std::vector<task_spec>& tasks) {
  struct row {
    std::string cells[6];
  };
  std::vector<row> rows;
  rows.push_back({{"task", "family", "shape", "ops", "eager ms", "lint"}});
  for (const auto& r : reports) {
    const task_spec* spec = nullptr;
    for (const auto& t : tasks)
      if (t.name == r.task) spec = &t;
    row x;
    x.cells[0] = r.task;
    if (spec) {
      x.cells[1] = spec->family;
      auto shapes = infer_shapes(*spec);
      x.cells[2] = shapes ? shape_str(shapes->input) + " -> " + shape_str(shapes->output()) : "?";
      x.cells[3] = std::to_string(spec->ops.size());
    }
    x.cells[4] = fmt("%.2f", r.eager_ms);
    x.cells[5] = r.ok ? "ok" : std::to_string(r.problems.size()) + " problem(s)";
    rows.push_back(std::move(x));
  }
  size_t width[6] = {};
  for (const auto& x : rows)
    for (int c = 0; c < 6; ++c) width[c] = std::max(width[c], x.cells[c].size());
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string line;
    for (int c = 0; c < 6; ++c) {
      const auto& cell = rows[i].cells[c];
      const bool right = c == 3 || c == 4;  // numbers
      const std::string pad(width[c] - cell.size(), ' ');
      line += (c ? "  " : "") + (right ? pad + cell : cell + (c == 5 ? "" : pad));
    }
    out += line + "\n";
    if (i == 0) out += std::string(line.size(), '-') + "\n";
  }
  for (const auto& r : reports)
    for (const auto& p : r.problems) out += r.task + ": " + p + "\n";
  return out;
}

}  // namespace crucible::kernels
