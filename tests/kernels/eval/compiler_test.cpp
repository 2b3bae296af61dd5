#include "kernels/eval/compiler.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "eval_test_support.hpp"

namespace crucible::kernels {
namespace {

using test::candidate_source;
using test::scratch_dir;

compiler_options fresh_cache_options(const std::string& name) {
  compiler_options o;
  o.cache_dir = scratch_dir() + "/compiler-" + name;
  return o;
}

// A stand-in compiler: answers --version, otherwise runs `body` (a shell script).
std::string fake_compiler(const std::string& name, const std::string& body) {
  std::string path = scratch_dir() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" << name << " 1.0'; exit 0; fi\n"
                      << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

TEST(Compiler, CompilesAndServesTheSecondCompileFromTheCache) {
  auto options = fresh_cache_options("cache-hit");
  std::string source = candidate_source("fused_bias_scale_relu");
  auto first = compile_source("c1", source, options);
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_TRUE(std::filesystem::exists(first.artifact));
  EXPECT_EQ(std::filesystem::path(first.artifact).extension(), ".so");
  EXPECT_EQ(first.candidate_id, "c1");
  EXPECT_EQ(first.content_hash.size(), 64u);

  auto second = compile_source("c2", source, options);
  ASSERT_TRUE(second.ok) << second.log;
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.artifact, first.artifact);
  EXPECT_LT(second.seconds, first.seconds);
  EXPECT_LT(second.seconds, 0.5 * first.seconds) << "a cache hit should not cost a compile";

  // Different flags are a different artifact.
  options.flags.push_back("-DVARIANT=1");
  auto third = compile_source("c3", source, options);
  ASSERT_TRUE(third.ok) << third.log;
  EXPECT_FALSE(third.cached);
  EXPECT_NE(third.artifact, first.artifact);

  // Nothing half-written or temporary is left in the cache.
  for (const auto& e : std::filesystem::directory_iterator(options.cache_dir))
    EXPECT_NE(e.path().filename().string().rfind(".", 0), 0u) << e.path();
}

TEST(Compiler, CompileErrorCarriesTheDiagnosticAndIsCached) {
  auto options = fresh_cache_options("error");
  std::string source = candidate_source("compile_error");
  auto first = compile_source("bad", source, options);
  EXPECT_FALSE(first.ok);
  EXPECT_FALSE(first.cached);
  EXPECT_NE(first.log.find("undeclared_scale_factor"), std::string::npos) << first.log;
  EXPECT_NE(first.log.find("candidate.cpp:"), std::string::npos)
      << "diagnostics name the file, not a temp path";
  EXPECT_EQ(first.log.find(".build-"), std::string::npos) << first.log;

  auto second = compile_source("bad-again", source, options);
  EXPECT_FALSE(second.ok);
  EXPECT_TRUE(second.cached) << "a broken source is not compiled twice";
  EXPECT_EQ(second.log, first.log);
}

TEST(Compiler, LongDiagnosticsAreTrimmed) {
  auto options = fresh_cache_options("trim");
  options.max_log_bytes = 600;
  std::string source = "#include <crucible_abi.h>\n";
  for (int i = 0; i < 200; ++i)
    source += "int f" + std::to_string(i) + "() { return undeclared_" + std::to_string(i) + "; }\n";
  auto r = compile_source("noisy", source, options);
  EXPECT_FALSE(r.ok);
  EXPECT_LE(r.log.size(), options.max_log_bytes + 100);
  EXPECT_NE(r.log.find("trimmed"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("undeclared_0"), std::string::npos) << "the first errors are the ones kept";
}

TEST(Compiler, WallDeadlineKillsTheCompilerAndEverythingItStarted) {
  auto options = fresh_cache_options("deadline");
  options.cxx = fake_compiler("slow-cxx", "sleep 30 & sleep 30; wait");
  options.timeout_s = 1.0;
  auto t0 = std::chrono::steady_clock::now();
  auto r = compile_source("slow", "int x;", options);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("timed out"), std::string::npos) << r.log;
  EXPECT_LT(took, 10.0);
  // Not cached: a deadline depends on load.
  auto again = compile_source("slow", "int x;", options);
  EXPECT_FALSE(again.cached);
}

TEST(Compiler, LimitsAreAppliedInTheChild) {
  auto options = fresh_cache_options("limits");
  options.cxx =
      fake_compiler("limits-cxx", "echo \"as=$(ulimit -v) cpu=$(ulimit -t) fsize=$(ulimit -f)\"; exit 1");
  options.memory_mb = 1536;
  options.timeout_s = 7;
  auto r = compile_source("limits", "int y;", options);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("as=" + std::to_string(1536 * 1024)), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("cpu=7"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("fsize=unlimited"), std::string::npos) << r.log;
}

TEST(Compiler, ResourceStarvedFailuresAreNotCached) {
  auto options = fresh_cache_options("starved");
  options.cxx = fake_compiler("starved-cxx", "echo 'cc1plus: out of memory allocating 65536 bytes'; exit 1");
  auto first = compile_source("s", "int w;", options);
  EXPECT_FALSE(first.ok);
  auto second = compile_source("s", "int w;", options);
  EXPECT_FALSE(second.cached) << "the next attempt may have the memory";
}

TEST(Compiler, ConfigurationErrorsAreValues) {
  compiler_options no_cache;
  auto r = compile_source("x", "int z;", no_cache);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("cache_dir"), std::string::npos);

  auto missing = fresh_cache_options("missing");
  missing.cxx = "no-such-compiler-crucible";
  r = compile_source("x", "int z;", missing);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("no-such-compiler-crucible"), std::string::npos) << r.log;
}

TEST(Compiler, ConcurrentCompilersShareOneCache) {
  auto options = fresh_cache_options("concurrent");
  std::string source = candidate_source("fused_bias_scale_relu") + "\n// concurrent\n";
  std::vector<compile_result> results(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] { results[i] = compile_source("c" + std::to_string(i), source, options); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_EQ(r.artifact, results[0].artifact);
  }
}

}  // namespace
}  // namespace crucible::kernels
