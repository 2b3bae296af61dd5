#include "kernels/verify/judge.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "kernels/verify/source_text.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/content_hash.hpp"

namespace crucible::kernels {

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    size_t nl = s.find('\n', start);
    lines.push_back(s.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

struct pattern {
  const char* flag;
  std::regex re;
  bool on_text;  ///< match against the text with string literals kept (includes, asm)
};

const std::vector<pattern>& patterns() {
  static const std::vector<pattern> all = [] {
    auto re = [](const char* p) { return std::regex(p, std::regex::ECMAScript | std::regex::optimize); };
    return std::vector<pattern>{
        {"spawns_thread", re(R"(\bstd\s*::\s*(thread|jthread|async)\b)"), false},
        {"spawns_thread", re(R"(\b(pthread_create|thrd_create|clone3?|v?fork)\s*\()"), false},
        {"spawns_thread", re(R"(\bthread\s+\w+\s*[({])"), false},
        {"spawns_thread", re(R"(#\s*pragma\s+omp\s+(parallel|task)\b)"), false},
        {"spawns_thread", re(R"(#\s*include\s*[<"](thread|future|pthread\.h|threads\.h)[>"])"), true},
        {"reads_clock", re(R"(\b(chrono|steady_clock|system_clock|high_resolution_clock)\b)"), false},
        {"reads_clock", re(R"(\b(clock_gettime|gettimeofday|timespec_get|ftime|clock_getres)\b)"), false},
        {"reads_clock", re(R"(\b(__rdtscp?|_?rdtscp?|__builtin_ia32_rdtscp?|__builtin_readcyclecounter)\b)"),
         false},
        {"reads_clock", re(R"(\b(clock|clock64)\s*\(\s*\))"), false},
        {"reads_clock", re(R"(\b(cudaEventElapsedTime|cuEventElapsedTime)\b)"), false},
        {"reads_clock", re(R"(%globaltimer|%clock64?\b)"), true},
        // CUDA: work on a stream of the candidate's own escapes the caller's stream and its events.
        {"creates_stream", re(R"(\b(cudaStreamCreate\w*|cuStreamCreate\w*)\s*\()"), false},
        // CUDA: device globals outlive the call (a place to cache results); __shared__ and __constant__
        // tables do not.
        {"static_state", re(R"(\b__(device|managed)__\b[^(]*(;|=|\[))"), false},
        {"reads_clock", re(R"(\btime\s*\(\s*(NULL|nullptr|0|&))"), false},
        {"reads_clock", re(R"(\b(asm|__asm__|__asm)\b.*\brdtscp?\b)"), true},
        {"calls_reference", re(R"(\b(at|torch|c10|caffe2|aten)\s*::)"), false},
        {"calls_reference", re(R"(#\s*include\s*[<"](torch|ATen|c10|caffe2)/)"), true},
        {"calls_reference", re(R"(\bcrucible\s*::|\breference_executor\b|\bset_reference_threads\b)"), false},
        {"calls_reference", re(R"(\bnamespace\s+(at|torch|c10|caffe2|crucible)\b)"), false},
        {"calls_reference", re(R"(_ZN(2at|5torch|3c10|8crucible))"), true},
        {"dynamic_loading",
         re(R"(\b(dlopen|dlmopen|dlsym|dlvsym|dladdr1?|dlinfo|dl_iterate_phdr|__libc_dlopen\w*)\b)"), false},
        {"dynamic_loading", re(R"(\bRTLD_\w+)"), false},
        {"dynamic_loading", re(R"(#\s*include\s*[<"]dlfcn\.h[>"])"), true},
        {"system_call",
         re(R"(\b(system|popen|execl|execlp|execle|execv|execvp|execvpe|execve|fexecve)\s*\()"), false},
        {"system_call", re(R"(\b(posix_spawnp?|syscall|ptrace|prctl|mprotect|setrlimit|sigaction)\b)"),
         false},
        {"system_call", re(R"(\b(signal|kill|raise)\s*\()"), false},
        {"system_call", re(R"(\b(asm|__asm__|__asm)\b.*\b(syscall|sysenter)\b|int\s+\$?0x80)"), true},
        {"file_access", re(R"(\b(fopen|freopen|open|openat|creat|mmap)\s*\()"), false},
        {"file_access", re(R"(\b(i|o)?fstream\b)"), false},
        {"file_access", re(R"("/(proc|sys|dev)/)"), true},
    };
  }();
  return all;
}

const std::vector<std::string>& flag_order() {
  static const std::vector<std::string> order = {"spawns_thread", "creates_stream",  "reads_clock",
                                                 "static_state",  "calls_reference", "dynamic_loading",
                                                 "system_call",   "file_access"};
  return order;
}

// Drops template argument lists, so "map<const void*, T>" does not read as a const declaration.
std::string drop_template_args(const std::string& s) {
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') {
      ++depth;
      continue;
    }
    if (c == '>' && depth > 0) {
      --depth;
      continue;
    }
    if (depth == 0) out += c;
  }
  return depth == 0 ? out : s;
}

bool const_like(const std::string& decl) {
  static const std::regex re(R"(\b(const|constexpr|consteval)\b)");
  return std::regex_search(drop_template_args(decl), re);
}

// "T f(args)" (a function declaration) rather than "T x = f(args)" or "T x[4]".
bool is_function_decl(const std::string& decl) {
  std::string d = drop_template_args(decl);
  size_t paren = d.find('(');
  if (paren == std::string::npos) return false;
  size_t eq = d.find('=');
  if (eq != std::string::npos && eq < paren) return false;
  static const std::regex fn_ptr(R"(\(\s*\*)");
  return !std::regex_search(d, fn_ptr);
}

// CUDA library handles and descriptors (cuDNN, cuBLAS, cuBLASLt) are set-up state, not results: a
// candidate may keep them across calls (creating a cuDNN handle per call costs milliseconds).
bool library_handle(const std::string& stmt) {
  static const std::regex re(
      R"(^(static\s+)?(cudnnHandle_t|cublasHandle_t|cublasLtHandle_t|cudnn\w*(Descriptor|Algo\w*)_t|cublasLt\w*_t)\s+\w+\s*(=\s*(nullptr|NULL|0|\{\s*\}))?\s*$)");
  return std::regex_search(trim(stmt), re);
}

// A definition of a mutable variable at namespace scope.
bool is_global_mutable(const std::string& stmt) {
  std::string s = trim(stmt);
  if (s.empty()) return false;
  static const std::regex skip(
      R"(^(typedef|using|template|extern|friend|static_assert|namespace|return|enum|struct|class|union)\b)");
  if (std::regex_search(s, skip)) {
    // "static struct { ... } x" and "struct S s;" still declare variables; forward declarations do not.
    static const std::regex fwd(R"(^(struct|class|union|enum)\s+\w+\s*$)");
    static const std::regex var(R"(^(struct|class|union)\s+\w+\s+\w+)");
    if (std::regex_search(s, fwd) || !std::regex_search(s, var)) return false;
  }
  if (const_like(s) || is_function_decl(s) || library_handle(s)) return false;
  static const std::regex two_tokens(R"([\w:>*&\]]\s*[*&]?\s*\b\w+\s*(\[|=|\{|$))");
  return std::regex_search(drop_template_args(s), two_tokens);
}

bool is_static_mutable(const std::string& stmt) {
  static const std::regex st(R"(\b(static|thread_local)\b)");
  return std::regex_search(stmt, st) && !const_like(stmt) && !library_handle(stmt);
}

// Mutable state that outlives a call: namespace-scope variables, static locals, static data members.
// A tiny scope tracker over the comment- and string-free code is enough for candidate files; static
// functions and const/constexpr tables are not state.
void find_static_state(const std::string& code, std::vector<std::pair<int, std::string>>& hits) {
  enum class scope { ns, type, func, init };
  std::vector<scope> stack;
  auto top = [&] { return stack.empty() ? scope::ns : stack.back(); };
  std::string stmt;
  int stmt_line = 0;
  int line = 1;
  bool line_start = true;
  bool in_pp = false;
  bool after_type = false;
  auto hit = [&](const std::string& why) { hits.emplace_back(stmt_line, why); };
  static const std::regex ns_re(R"(\bnamespace\b|^extern\s*"[^"]*"\s*$)");
  static const std::regex type_re(R"(\b(struct|class|union|enum)\b)");
  static const std::regex lambda_re(R"(=\s*\[)");

  for (size_t i = 0; i < code.size(); ++i) {
    char c = code[i];
    if (c == '\n') {
      ++line;
      // A preprocessor directive ends at a newline not escaped by a backslash.
      if (in_pp && !(i > 0 && code[i - 1] == '\\')) in_pp = false;
      line_start = true;
      stmt += ' ';
      continue;
    }
    if (line_start && (c == ' ' || c == '\t')) continue;
    if (line_start && c == '#') in_pp = true;
    line_start = false;
    if (in_pp) continue;
    if (trim(stmt).empty() && !std::isspace(static_cast<unsigned char>(c))) stmt_line = line;

    if (c == '{') {
      std::string s = trim(stmt);
      scope t = top();
      if (t == scope::func) {
        if (is_static_mutable(s)) hit(s);
        stack.push_back(scope::func);
      } else if (t == scope::init) {
        stack.push_back(scope::init);
      } else if (std::regex_search(s, ns_re)) {
        stack.push_back(scope::ns);
      } else if (std::regex_search(s, type_re) && s.find('(') == std::string::npos) {
        static const std::regex static_re(R"(^static\b)");
        if (t == scope::ns && std::regex_search(s, static_re)) hit(s);
        stack.push_back(scope::type);
      } else if (s.empty() || (s.find('(') != std::string::npos && s.find('=') == std::string::npos) ||
                 std::regex_search(s, lambda_re)) {
        stack.push_back(scope::func);  // a function body (or a lambda bound to a name)
      } else {
        // A brace initializer: "float lut[4] = {" or "int x{".
        if (t == scope::ns ? is_global_mutable(s) : is_static_mutable(s)) hit(s);
        stack.push_back(scope::init);
      }
      stmt.clear();
      after_type = false;
    } else if (c == '}') {
      after_type = !stack.empty() && stack.back() == scope::type;
      if (!stack.empty()) stack.pop_back();
      stmt.clear();
    } else if (c == ';') {
      std::string s = trim(stmt);
      if (!s.empty()) {
        switch (top()) {
          case scope::func:
            if (is_static_mutable(s)) hit(s);
            break;
          case scope::type:
            if (is_static_mutable(s) && !is_function_decl(s)) hit(s);
            break;
          case scope::ns:
            if (after_type ? std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'
                           : is_global_mutable(s))
              hit(s);
            break;
          case scope::init:
            break;
        }
      }
      stmt.clear();
      after_type = false;
    } else {
      stmt += c;
    }
  }
}

std::string line_evidence(const std::string& flag, int line, const std::vector<std::string>& raw_lines) {
  std::string text = line >= 1 && line <= static_cast<int>(raw_lines.size()) ? trim(raw_lines[line - 1]) : "";
  if (text.size() > 160) text = text.substr(0, 157) + "...";
  return flag + ": line " + std::to_string(line) + ": " + text;
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

}  // namespace

std::vector<std::string> static_source_flags(const std::string& source, std::vector<std::string>* evidence) {
  auto stripped = strip_source(source);
  auto raw_lines = split_lines(source);
  auto text_lines = split_lines(stripped.text);
  auto code_lines = split_lines(stripped.code);

  std::map<std::string, std::vector<int>> found;  // flag -> lines
  for (size_t n = 0; n < code_lines.size(); ++n)
    for (const auto& p : patterns()) {
      const std::string& line = p.on_text ? text_lines[n] : code_lines[n];
      if (std::regex_search(line, p.re)) {
        auto& lines = found[p.flag];
        if (lines.empty() || lines.back() != static_cast<int>(n + 1))
          lines.push_back(static_cast<int>(n + 1));
      }
    }
  std::vector<std::pair<int, std::string>> state;
  find_static_state(stripped.code, state);
  for (const auto& [line, stmt] : state) {
    auto& lines = found["static_state"];
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }

  std::vector<std::string> flags;
  for (const auto& flag : flag_order()) {
    auto it = found.find(flag);
    if (it == found.end()) continue;
    flags.push_back(flag);
    if (!evidence) continue;
    auto lines = it->second;
    std::sort(lines.begin(), lines.end());
    constexpr size_t max_lines = 3;  // enough to act on; a file full of std::thread says it thrice
    for (size_t k = 0; k < lines.size() && k < max_lines; ++k)
      evidence->push_back(line_evidence(flag, lines[k], raw_lines));
    if (lines.size() > max_lines)
      evidence->push_back(flag + ": and " + std::to_string(lines.size() - max_lines) + " more lines");
  }
  return flags;
}

verdict judge(const candidate& cand, const compile_result& compiled, const bench_result& bench,
              const judge_options& options) {
  verdict v;
  v.candidate_id = !cand.id.empty()                 ? cand.id
                   : !compiled.candidate_id.empty() ? compiled.candidate_id
                                                    : bench.candidate_id;
  v.content_hash = !cand.content_hash.empty() ? cand.content_hash
                   : !cand.source.empty()     ? sha256_hex(cand.source)
                                              : compiled.content_hash;
  v.speedup = 0.0;
  v.reward = 0.0;

  if (!compiled.ok) {
    v.outcome = wire_name(outcome::compile_error);
    std::string first = compiled.log.substr(0, compiled.log.find('\n'));
    if (!first.empty()) v.evidence.push_back("compile: " + first);
    return v;
  }
  if (bench.status == "crash" || bench.status == "timeout") {
    v.outcome = wire_name(bench.status == "crash" ? outcome::crash : outcome::timeout);
    if (!bench.error.empty()) v.evidence.push_back(bench.status + ": " + bench.error);
    return v;
  }
  if (bench.status != "ok") {  // load_error, error, and anything a newer worker may say
    v.outcome = wire_name(outcome::error);
    v.evidence.push_back(bench.status + (bench.error.empty() ? "" : ": " + bench.error));
    return v;
  }

  // Hack: dynamic evidence from the worker. Static features of the source (threads, clocks, streams, static
  // state, ...) are recorded beside it but decide nothing on their own: a regex is both evadable and wrong on
  // honest code (DESIGN.md §6, evidence not patterns); the worker checks such candidates more closely.
  std::set<std::string> seen;
  for (const auto& tag : bench.evidence) {
    std::string flag = tag.substr(0, tag.find(':'));
    if (seen.insert(flag).second) v.flags.push_back(flag);
    v.evidence.push_back(tag);
  }
  for (const auto& note : bench.notes)
    for (const auto& flag : v.flags)
      if (starts_with(note, flag)) {
        v.evidence.push_back(note);
        break;
      }
  if (!cand.source.empty()) {
    std::vector<std::string> ev;
    static_source_flags(cand.source, &ev);
    for (const auto& e : ev) v.evidence.push_back("static feature " + e);
  }
  if (!v.flags.empty()) {
    v.outcome = wire_name(outcome::hack);
    v.reward = options.penalty;
    return v;
  }

  if (!bench.correct) {
    v.outcome = wire_name(outcome::incorrect);
    v.evidence.push_back("max_abs_err " + std::to_string(bench.max_abs_err) + ", max_rel_err " +
                         std::to_string(bench.max_rel_err) + (bench.error.empty() ? "" : "; " + bench.error));
    return v;
  }
  v.outcome = wire_name(outcome::pass);
  double s = bench.speedup_vs_eager;
  if (!std::isfinite(s) || s < 0) s = s > 0 ? options.max_believed_speedup : 0.0;
  v.speedup = std::min(s, options.max_believed_speedup);
  v.reward = v.speedup;
  return v;
}

}  // namespace crucible::kernels
