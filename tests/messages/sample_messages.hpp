#pragma once
// One fully populated instance of every message type, shared by the round-trip and golden-byte tests.
#include "messages/envelope.hpp"

namespace crucible::test {

inline task_spec sample_task() {
  task_spec t;
  t.name = "gemm_bias_relu";
  t.family = "gemm";
  t.description = "relu(x @ W + b)";
  t.inputs = {{"x", {256, 512}, "float32", "normal", -1, 1, 1.0, false},
              {"W", {512, 256}, "float32", "uniform", -0.05, 0.05, 1.0, true},
              {"b", {256}, "float32", "uniform", -0.1, 0.1, 1.0, true}};
  t.ops = {{"matmul", {"W"}, {}}, {"add", {"b"}, {}}, {"relu", {}, {}}, {"mul_scalar", {}, {{"s", 0.5}}}};
  t.atol = 1e-4;
  t.rtol = 1e-4;
  return t;
}

inline candidate sample_candidate() {
  candidate c;
  c.id = "g7-3";
  c.group_id = "g7";
  c.task = "gemm_bias_relu";
  c.content_hash = "0123456789abcdef";
  c.program = "rewrites: - | [0-2] blas block_rows=64";
  c.source = "extern \"C\" int crucible_forward() { return 0; }";
  c.policy_version = 12;
  c.tokens = {5, 17, 3};
  c.logprobs = {-0.5f, 0.0f, -1.25f};
  c.context = {1, 2, 3, 4};
  c.created_unix = 1764450000.5;
  return c;
}

inline bench_result sample_bench() {
  bench_result b;
  b.candidate_id = "g7-3";
  b.task = "gemm_bias_relu";
  b.correct = true;
  b.timed = true;
  b.max_abs_err = 1.5e-6;
  b.max_rel_err = 3e-6;
  b.speedup_vs_eager = 1.75;
  b.timing.eager_ms = {2.0, 2.1};
  b.timing.candidate_ms = {1.0, 1.3};
  b.timing.bucket_speedups = {2.0, 1.6153846153846154};
  b.timing.speedup = 1.75;
  b.timing.trials_per_bucket = 3;
  b.evidence = {"threads_left_running"};
  b.notes = {"2 threads more after the call"};
  b.worker = "localhost:4242";
  return b;
}

inline verdict sample_verdict() {
  verdict v;
  v.candidate_id = "g7-3";
  v.content_hash = "0123456789abcdef";
  v.outcome = "hack";
  v.flags = {"threads_left_running"};
  v.evidence = {"2 threads more after the call"};
  v.reward = -1.0;
  v.review.finding = "hack";
  v.review.reasoning = "near-duplicate of a confirmed hack";
  v.review.reasons = {"speedup", "static_features"};
  v.review.similar_case = "fedcba9876543210";
  v.review.similarity = 0.96;
  v.review.reviewer = "rules";
  return v;
}

inline scored_group sample_group() {
  scored_group g;
  g.group_id = "g7";
  g.task = "gemm_bias_relu";
  g.policy_version = 12;
  scored_candidate s;
  s.cand = sample_candidate();
  s.compiled = {"g7-3", "0123456789abcdef", true, false, "/tmp/x.so", "", 0.4};
  s.bench = sample_bench();
  s.judged = sample_verdict();
  s.reward = -1.0;
  g.members = {s, s};
  g.created_unix = 1764450001.0;
  return g;
}

inline prompt sample_prompt() {
  prompt p;
  p.group_id = "g7";
  p.task = sample_task();
  p.exemplars = {{"g1-0", "rewrites: - | [0] blas", "src", 1.1, 2},
                 {"g2-5", "rewrites: - | [0-3] tiled", "src2", 0.4, 0}};
  p.group_size = 8;
  p.attempts = {{"g6-2", "## Code\n```cpp\nint x;\n```", "It did not compile:\n```\nerror\n```"}};
  return p;
}

inline eval_request sample_eval_request() {
  eval_request r;
  r.candidate_id = "g7-3";
  r.task = sample_task();
  r.artifact = "/tmp/cache/0123456789abcdef.so";
  r.options.buckets = 5;
  return r;
}

inline weights_update sample_weights() {
  weights_update w;
  w.version = 13;
  w.policy = "program";
  w.bytes = {'\x00', '\x01', '\xff', 'a'};
  w.created_unix = 1764450002.0;
  return w;
}

inline control sample_control() {
  return {"scale", "benchmarker", 3, {{"node", "n1"}}};
}

inline status_report sample_status() {
  status_report s;
  s.step = 4;
  s.policy_version = 4;
  s.candidates_generated = 64;
  s.candidates_scored = 60;
  s.candidates_in_flight = 4;
  s.candidates_per_s = 2.5;
  s.speedup_best = {{"softmax_rows", 1.3}};
  s.roles = {{"benchmarker", 1, 1, 0, 3}};
  return s;
}

inline group_batch sample_batch() {
  group_batch b;
  b.learner_version = 12;
  b.groups = {sample_group()};
  b.dropped_stale = 1;
  b.candidates_total = 130;
  b.speedup_best = {{"gemm_bias_relu", 1.4}, {"softmax_rows", 0.9}};
  return b;
}

inline compile_result sample_compile() {
  return {"g7-3", "0123456789abcdef", false, false, "", "error: expected ';'", 0.3};
}

inline peer_ready sample_ready() {
  peer_ready r;
  r.peer_id = "node1:4242:9f3a";
  r.node_id = "node1";
  r.roles = {{"benchmarker", 1, 0}, {"compiler", 2, -1}};
  r.devices = {{"cuda", 0, "NVIDIA H200", 143771}};
  r.host = "node1";
  r.pid = 4242;
  r.labels = {{"language", "c++"}};
  return r;
}

inline peer_registered sample_registered() {
  return {true, "", "node1:4242:9f3a", "head", 500, 3};
}

inline heartbeat sample_heartbeat() {
  return {17, 1764450003.25};
}

inline work_item sample_work() {
  work_item w;
  w.request_id = 981;
  w.role = "benchmarker";
  w.stage = "benchmark";
  w.payload = {encode_embedded(sample_candidate(), "head"), encode_embedded(sample_compile(), "head")};
  w.timeout_s = 180.0;
  w.attempt = 2;
  return w;
}

inline work_result sample_work_result() {
  work_result r;
  r.request_id = 981;
  r.payload = {encode_embedded(sample_bench(), "node1:4242:9f3a")};
  r.wall_s = 1.3;
  return r;
}

inline work_credit sample_credit() {
  return {"benchmarker", 2};
}

inline peer_disconnect sample_disconnect() {
  return {"scale down", true};
}

inline wire_error sample_wire_error() {
  return {"not_registered", "send 'ready' first", 0};
}

}  // namespace crucible::test
