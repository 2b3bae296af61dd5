#include "kernels/task/task_loader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kernels/task/chain_shapes.hpp"
#include "kernels/task/op_catalog.hpp"

#ifndef CRUCIBLE_SOURCE_DIR
#error "CRUCIBLE_SOURCE_DIR must be defined by the build (kernels/CMakeLists.txt)"
#endif

namespace crucible::kernels {
namespace {

namespace fs = std::filesystem;

// Raised inside the parser only and turned into an error value at the boundary (parse_task_yaml).
struct parse_failure {
  std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw parse_failure{path + ": " + what};
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
std::string index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

const char* kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "an undefined node";
  }
}

std::string got(const YAML::Node& n) {
  if (n.IsScalar()) return " (got '" + n.Scalar() + "')";
  return std::string(" (got ") + kind_name(n) + ")";
}

/// Checks that `n` is a map whose keys are all in `allowed` (each at most once): typos must not pass.
void check_keys(const YAML::Node& n, const std::string& path, const std::vector<std::string>& allowed) {
  if (!n.IsMap()) fail(path.empty() ? "<top>" : path, std::string("expected a map") + got(n));
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) fail(path.empty() ? "<top>" : path, "keys must be plain strings");
    const std::string key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(join(path, key), "unknown key (expected one of: " + list + ")");
    }
    if (!seen.insert(key).second) fail(join(path, key), "duplicate key");
  }
}

std::string as_string(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) fail(path, std::string("expected a string") + got(n));
  return n.Scalar();
}

double as_number(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) fail(path, std::string("expected a number") + got(n));
  double v = 0;
  if (!YAML::convert<double>::decode(n, v)) fail(path, "expected a number" + got(n));
  return v;
}

int64_t as_integer(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) fail(path, std::string("expected an integer") + got(n));
  int64_t v = 0;
  if (!YAML::convert<int64_t>::decode(n, v)) fail(path, "expected an integer" + got(n));
  return v;
}

bool as_bool(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) fail(path, std::string("expected true or false") + got(n));
  bool v = false;
  if (!YAML::convert<bool>::decode(n, v)) fail(path, "expected true or false" + got(n));
  return v;
}

std::vector<std::string> as_string_list(const YAML::Node& n, const std::string& path) {
  std::vector<std::string> out;
  if (n.IsScalar()) return {n.Scalar()};  // `args: W` is as clear as `args: [W]`
  if (!n.IsSequence()) fail(path, std::string("expected a list of strings") + got(n));
  for (size_t i = 0; i < n.size(); ++i) out.push_back(as_string(n[i], index(path, i)));
  return out;
}

tensor_spec parse_input(const YAML::Node& n, const std::string& path) {
  check_keys(n, path, {"name", "shape", "dtype", "dist", "lo", "hi", "scale", "param"});
  tensor_spec t;
  if (!n["name"]) fail(join(path, "name"), "required (the name ops refer to in 'args')");
  t.name = as_string(n["name"], join(path, "name"));
  if (!n["shape"]) fail(join(path, "shape"), "required (a list of positive integers)");
  const auto shape = n["shape"];
  const std::string shape_path = join(path, "shape");
  if (!shape.IsSequence() || shape.size() == 0 || shape.size() > 8)
    fail(shape_path, "expected a list of 1 to 8 positive integers" + got(shape));
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = as_integer(shape[i], index(shape_path, i));
    if (d <= 0) fail(index(shape_path, i), "expected a positive integer" + got(shape[i]));
    t.shape.push_back(d);
  }
  if (n["dtype"]) {
    t.dtype = as_string(n["dtype"], join(path, "dtype"));
    if (dtype_code(t.dtype) < 0)
      fail(join(path, "dtype"),
           "expected float32, float16, bfloat16, float64, int32, int64 or bool (got '" + t.dtype + "')");
  }
  if (n["dist"]) {
    t.dist = as_string(n["dist"], join(path, "dist"));
    if (t.dist != "normal" && t.dist != "uniform" && t.dist != "heavy_tailed" && t.dist != "positive")
      fail(join(path, "dist"), "expected normal, uniform, heavy_tailed or positive (got '" + t.dist + "')");
  }
  if (n["lo"]) t.lo = as_number(n["lo"], join(path, "lo"));
  if (n["hi"]) t.hi = as_number(n["hi"], join(path, "hi"));
  if ((n["lo"] || n["hi"]) && t.dist != "uniform")
    fail(join(path, n["lo"] ? "lo" : "hi"), "only for dist: uniform");
  if (t.dist == "uniform" && !(t.lo < t.hi)) fail(join(path, "lo"), "expected lo < hi for dist: uniform");
  if (n["scale"]) {
    t.scale = as_number(n["scale"], join(path, "scale"));
    if (!(t.scale > 0)) fail(join(path, "scale"), "expected a positive number" + got(n["scale"]));
  }
  if (n["param"]) t.param = as_bool(n["param"], join(path, "param"));
  return t;
}

op_spec parse_op(const YAML::Node& n, const std::string& path) {
  op_spec op;
  std::string op_path = path;
  if (n.IsScalar()) {
    op.op = n.Scalar();  // shorthand: an op with no args and no attrs
  } else {
    check_keys(n, path, {"op", "args", "attrs"});
    op_path = join(path, "op");
    if (!n["op"]) fail(op_path, "required (the op's name)");
    op.op = as_string(n["op"], op_path);
  }
  const op_info* info = find_op(op.op);
  if (!info) {
    std::string known;
    for (const auto& o : op_catalog()) known += (known.empty() ? "" : ", ") + o.name;
    fail(op_path, "unknown op '" + op.op + "' (known ops: " + known + ")");
  }
  if (!n.IsScalar()) {
    if (n["args"]) op.args = as_string_list(n["args"], join(path, "args"));
    if (const auto attrs = n["attrs"]) {
      std::vector<std::string> names;
      for (const auto& a : info->attrs) names.push_back(a.name);
      const std::string attrs_path = join(path, "attrs");
      if (names.empty()) fail(attrs_path, op.op + " takes no attributes");
      check_keys(attrs, attrs_path, names);
      for (const auto& kv : attrs)
        op.attrs[kv.first.Scalar()] = as_number(kv.second, join(attrs_path, kv.first.Scalar()));
    }
  }
  for (const auto& a : info->attrs)
    if (a.required && !op.attrs.count(a.name))
      fail(join(join(path, "attrs"), a.name), "required by " + op.op + " (a number)");
  const int nargs = static_cast<int>(op.args.size());
  if (nargs < info->min_args || nargs > info->max_args) {
    const std::string want = info->min_args == info->max_args
                                 ? std::to_string(info->min_args)
                                 : std::to_string(info->min_args) + " to " + std::to_string(info->max_args);
    fail(join(path, "args"), op.op + " takes " + want + " side input(s), got " + std::to_string(nargs) +
                                 (info->summary.empty() ? "" : " (" + info->summary + ")"));
  }
  return op;
}

task_spec parse_task(const YAML::Node& root) {
  check_keys(root, "", {"name", "family", "description", "inputs", "ops", "tolerance", "targets"});
  task_spec t;
  if (!root["name"]) fail("name", "required");
  t.name = as_string(root["name"], "name");
  if (t.name.empty()) fail("name", "must not be empty");
  if (root["family"]) t.family = as_string(root["family"], "family");
  if (root["description"]) t.description = as_string(root["description"], "description");

  const auto inputs = root["inputs"];
  if (!inputs) fail("inputs", "required (a list; inputs[0] starts the chain)");
  if (!inputs.IsSequence() || inputs.size() == 0) fail("inputs", "expected a non-empty list" + got(inputs));
  for (size_t i = 0; i < inputs.size(); ++i) {
    t.inputs.push_back(parse_input(inputs[i], index("inputs", i)));
    for (size_t j = 0; j < i; ++j)
      if (t.inputs[j].name == t.inputs[i].name)
        fail(index("inputs", i) + ".name", "duplicate input name '" + t.inputs[i].name + "'");
  }

  const auto ops = root["ops"];
  if (!ops) fail("ops", "required (a list of ops applied to inputs[0] in order)");
  if (!ops.IsSequence() || ops.size() == 0) fail("ops", "expected a non-empty list" + got(ops));
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = index("ops", i);
    t.ops.push_back(parse_op(ops[i], path));
    for (size_t k = 0; k < t.ops.back().args.size(); ++k) {
      const auto& arg = t.ops.back().args[k];
      const int idx = input_index(t, arg);
      if (idx < 0) fail(index(path + ".args", k), "'" + arg + "' is not among the task's inputs");
      if (idx == 0) fail(index(path + ".args", k), "'" + arg + "' is inputs[0], the chain's own start");
    }
  }

  if (const auto tol = root["tolerance"]) {
    check_keys(tol, "tolerance", {"atol", "rtol"});
    if (tol["atol"]) t.atol = as_number(tol["atol"], "tolerance.atol");
    if (tol["rtol"]) t.rtol = as_number(tol["rtol"], "tolerance.rtol");
    if (tol["atol"] && !(t.atol >= 0)) fail("tolerance.atol", "expected a number >= 0");
    if (tol["rtol"] && !(t.rtol >= 0)) fail("tolerance.rtol", "expected a number >= 0");
  }
  if (const auto targets = root["targets"]) {
    t.targets = as_string_list(targets, "targets");
    if (t.targets.empty()) fail("targets", "expected at least one target (cpu, cuda)");
    for (size_t i = 0; i < t.targets.size(); ++i)
      if (t.targets[i] != "cpu" && t.targets[i] != "cuda")
        fail(index("targets", i), "expected cpu or cuda (got '" + t.targets[i] + "')");
  }
  return t;
}

}  // namespace

expected<task_spec> parse_task_yaml(std::string_view yaml_text, std::string_view origin) {
  const std::string where(origin);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return make_error(where + ":" + std::to_string(e.mark.line + 1) + ":" +
                      std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
  }
  task_spec task;
  try {
    task = parse_task(root);
  } catch (const parse_failure& f) {
    return make_error(where + ": " + f.message);
  } catch (const YAML::Exception& e) {
    return make_error(where + ": " + e.what());
  }
  // Shapes and argument fit of the whole chain (the same check the reference and program space use).
  auto shapes = infer_shapes(task);
  if (!shapes) return make_error(where + ": " + shapes.message());
  return task;
}

expected<task_spec> load_task_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(path + ": cannot read the task file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_task_yaml(text.str(), fs::path(path).filename().string());
}

expected<std::vector<task_spec>> load_task_suite(const std::string& dir, std::string_view target) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(dir + ": not a directory of task files");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".yaml") files.push_back(it->path());
  if (ec) return make_error(dir + ": cannot list the task files: " + ec.message());
  std::sort(files.begin(), files.end());

  std::vector<task_spec> out;
  std::map<std::string, std::string> origin_of;  // task name -> file, for duplicate reports
  for (const auto& file : files) {
    auto task = load_task_file(file.string());
    if (!task) return make_error(task.message());
    // A task is found by name (`crucible eval --task T`), so the file must say which task it holds.
    if (task->name != file.stem().string())
      return make_error(file.filename().string() + ": name: '" + task->name +
                        "' must match the file name (expected '" + file.stem().string() + "')");
    auto [it, fresh] = origin_of.emplace(task->name, file.string());
    if (!fresh)
      return make_error(file.string() + ": name: duplicate task name '" + task->name + "' (also in " +
                        it->second + ")");
    if (!target.empty() &&
        std::find(task->targets.begin(), task->targets.end(), target) == task->targets.end())
      continue;
    out.push_back(std::move(*task));
  }
  std::sort(out.begin(), out.end(), [](const task_spec& a, const task_spec& b) { return a.name < b.name; });
  return out;
}

std::string default_task_dir() {
  return CRUCIBLE_SOURCE_DIR "/kernels/tasks";
}

}  // namespace crucible::kernels
