#include "actors/stages/sft_stage.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "actors/options/policy_section.hpp"
#include "actors/options/sft_section.hpp"
#include "messages/content_hash.hpp"
#include "policies/lm/bpe_trainer.hpp"
#include "policies/lm/contrastive_prompt.hpp"
#include "policies/lm/lm_policy.hpp"
#include "policies/lm/lm_sft_trainer.hpp"
#include "policies/lm/python_source_variants.hpp"
#include "policies/lm/sft_examples.hpp"
#include "runtime/config/run_context.hpp"
#include "runtime/hosting/terminal_progress.hpp"
#include "runtime/storage/replay_store.hpp"

namespace crucible::actors {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path + ".tmp", std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) return make_error("cannot write " + path);
  out.close();
  std::error_code ec;
  fs::rename(path + ".tmp", path, ec);
  if (ec) return make_error("cannot write " + path + ": " + ec.message());
  return {};
}

// The model the stage trains from scratch: Qwen2's architecture at sft.model's shape, the BPE's vocabulary.
policies::decoder_config embedded_config(const sft_section& s, int64_t vocab, int64_t max_positions,
                                         int64_t eos) {
  policies::decoder_config c;
  c.family = policies::lm_family::qwen2;
  c.vocab_size = vocab;
  c.hidden_size = s.hidden_size;
  c.intermediate_size = s.intermediate_size;
  c.num_hidden_layers = s.layers;
  c.num_attention_heads = s.heads;
  c.num_key_value_heads = s.kv_heads;
  c.head_dim = s.hidden_size / s.heads;
  c.max_position_embeddings = max_positions;
  c.rope_theta = s.rope_theta;
  c.tie_word_embeddings = true;
  c.qkv_bias = true;
  c.eos_token_ids = {eos};
  return c;
}

std::atomic<bool> stop_asked{false};
void on_stop_signal(int) {
  stop_asked.store(true);
}

// Ctrl-C (or SIGTERM) during training asks for a checkpoint and an orderly end, as in a training run.
struct stop_signals {
  void (*prev_int)(int), (*prev_term)(int);
  stop_signals() {
    stop_asked.store(false);
    prev_int = std::signal(SIGINT, on_stop_signal);
    prev_term = std::signal(SIGTERM, on_stop_signal);
  }
  ~stop_signals() {
    std::signal(SIGINT, prev_int);
    std::signal(SIGTERM, prev_term);
  }
};

}  // namespace

std::vector<std::string> sft_source_hashes(const std::string& sft_stage_dir) {
  auto j = nlohmann::json::parse(read_file((fs::path(sft_stage_dir) / "sft_sources.json").string()), nullptr,
                                 false);
  std::vector<std::string> out;
  if (j.is_array())
    for (const auto& v : j)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

expected<sft_outcome> run_sft_training(const runtime::config& cfg, const std::string& stage_dir,
                                       const std::string& corpus_db) {
  const auto& s = cfg.section<sft_section>();
  const auto& ps = cfg.section<policy_section>();
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  sft_outcome out;

  // 1. The corpus: the corpus run's correct kernels (none with sft.corpus_policy none), and the user's.
  auto tasks = runtime::select_tasks(cfg);
  if (!tasks) return tasks.err();
  std::map<std::string, task_spec> by_name;
  for (const auto& t : *tasks) by_name[t.name] = t;
  std::vector<policies::sft_source> sources;
  if (!corpus_db.empty()) {
    auto passed = runtime::replay_store::read_scored(corpus_db, "pass");
    if (!passed) return passed.err();
    for (const auto& c : *passed)
      sources.push_back({c.cand.task, c.cand.source, c.cand.program, c.judged.speedup});
  }
  if (!s.jsonl.empty()) {
    auto user = policies::read_sft_jsonl(s.jsonl);
    if (!user) return user.err();
    sources.insert(sources.end(), user->begin(), user->end());
  }
  policies::sft_data_options data;
  data.variants = s.variants;
  data.contrastive = s.contrastive;
  data.seed = static_cast<uint64_t>(cfg.run.seed);
  auto examples = policies::build_sft_examples(sources, by_name, cfg.target, data);
  if (!examples) return examples.err();
  {
    std::set<std::string> distinct;
    for (const auto& src : sources) distinct.insert(src.task + "\n" + src.source);
    out.sources = static_cast<int64_t>(distinct.size());
  }

  // 2. The model and its tokenizer: resumed, the user's, or made here.
  const fs::path train_dir = fs::path(stage_dir) / "train";
  const fs::path model_dir = fs::path(stage_dir) / "model";
  policies::lm_policy_options lo = ps.lm;
  lo.dtype = "f32";
  std::unique_ptr<policies::lm_policy> policy;
  int64_t step = 0;
  std::vector<char> trainer_state;
  if (fs::exists(train_dir / "progress.json")) {
    auto j = nlohmann::json::parse(read_file((train_dir / "progress.json").string()), nullptr, false);
    if (!j.is_object() || !j.contains("step"))
      return make_error((train_dir / "progress.json").string() + ": malformed");
    step = j["step"].get<int64_t>();
    lo.checkpoint = (train_dir / "model").string();
    auto p = policies::lm_policy::load(lo);
    if (!p) return make_error("sft: resuming from " + lo.checkpoint + ": " + p.message());
    policy = std::move(*p);
    std::string st = read_file((train_dir / "trainer.state").string());
    trainer_state.assign(st.begin(), st.end());
    spdlog::info("sft: resumed at step {}", step);
  } else if (!ps.lm.checkpoint.empty()) {
    auto p = policies::lm_policy::load(lo);
    if (!p) return make_error("sft: policy.lm.checkpoint: " + p.message());
    policy = std::move(*p);
  } else {
    std::vector<std::string> texts;
    for (const auto& e : *examples) {
      auto r = policies::render_contrastive_prompt(e.prompt_);
      if (r) texts.push_back(r->text);
      texts.push_back(e.answer);
    }
    policies::bpe_training_options bo;
    bo.vocab_size = s.vocab_size;
    bo.special_tokens = {policies::end_of_text};
    auto t0 = elapsed();
    auto tok = policies::train_bpe(texts, bo);
    if (!tok) return make_error("sft: BPE: " + tok.message());
    std::printf("sft: a byte-level BPE of %lld tokens trained on %zu texts in %.1f s\n",
                static_cast<long long>(tok->vocab_size()), texts.size(), elapsed() - t0);
    auto eos = tok->token_id(policies::end_of_text);
    auto lm = policies::decoder_lm::create(
        embedded_config(s, tok->vocab_size(), ps.lm.max_context, eos.value_or(0)),
        static_cast<uint64_t>(cfg.run.seed));
    if (!lm) return make_error("sft: sft.model: " + lm.message());
    lo.framing = "plain";
    auto p = policies::lm_policy::from_parts(std::move(*lm), std::move(*tok), lo);
    if (!p) return make_error("sft: " + p.message());
    policy = std::move(*p);
  }
  out.vocab_size = policy->tokenizer().vocab_size();
  out.parameters = policy->parameter_count();

  // 3. Examples as tokens: the prompt as the policy frames it, the answer as it is trained.
  std::vector<policies::lm_example> train;
  std::vector<std::string> hashes;
  std::set<std::string> hash_set;
  for (const auto& e : *examples) {
    auto prompt_ids = policy->encode_prompt(e.prompt_);
    auto answer_ids = policy->encode_answer(e.answer);
    if (!prompt_ids || static_cast<int64_t>(answer_ids.size()) > ps.lm.max_new_tokens) {
      ++out.skipped_too_long;
      continue;
    }
    train.push_back({std::move(*prompt_ids), std::move(answer_ids), 1.0});
    auto h = sha256_hex(policies::normalized_code(e.code, !e.prompt_.task.module.empty()));
    if (hash_set.insert(h).second) hashes.push_back(h);
  }
  out.examples = static_cast<int64_t>(train.size());
  if (train.empty())
    return make_error("sft: no example fits policy.lm.max_new_tokens (" +
                      std::to_string(ps.lm.max_new_tokens) + ") and policy.lm.max_context; raise them");
  std::error_code ec;
  fs::create_directories(train_dir, ec);
  if (auto st =
          write_file((fs::path(stage_dir) / "sft_sources.json").string(), nlohmann::json(hashes).dump());
      !st)
    return st.err();
  std::printf(
      "sft: %lld examples from %lld correct kernels (%lld too long for policy.lm.max_new_tokens), a model of "
      "%lld parameters, vocabulary %lld\n",
      static_cast<long long>(out.examples), static_cast<long long>(out.sources),
      static_cast<long long>(out.skipped_too_long), static_cast<long long>(out.parameters),
      static_cast<long long>(out.vocab_size));
  std::fflush(stdout);

  // 4. Training: shuffled epochs, a checkpoint every sft.checkpoint_every steps and at the end.
  policies::lm_sft_options so;
  so.lr = s.lr;
  so.warmup_steps = s.warmup_steps;
  so.total_steps = s.steps;
  so.micro_batch = ps.lm.micro_batch;
  so.bf16 = ps.lm.bf16;
  so.checkpoint_activations = ps.lm.checkpoint_activations;
  so.weight_decay = ps.lm.weight_decay;
  policies::lm_sft_trainer trainer(policy->model(), so);
  if (!trainer_state.empty())
    if (auto st = trainer.load_state(trainer_state); !st)
      return make_error("sft: trainer state: " + st.message());
  auto checkpoint = [&]() -> status {
    if (auto st = policy->save((train_dir / "model").string()); !st) return st;
    auto state = trainer.save_state();
    if (auto st = write_file((train_dir / "trainer.state").string(), std::string(state.begin(), state.end()));
        !st)
      return st;
    return write_file((train_dir / "progress.json").string(), nlohmann::json{{"step", step}}.dump());
  };
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::ofstream metrics((fs::path(stage_dir) / "metrics.jsonl").string(), std::ios::app);
  const int64_t every = std::max<int64_t>(1, s.steps / 20);
  double tokens_since = 0, since = elapsed();
  stop_signals signals;
  // On a terminal, a live line with the step, loss and ETA between the printed lines.
  std::optional<runtime::terminal_progress> live;
  if (runtime::terminal_progress::is_live(stdout)) live.emplace(stdout, true);
  runtime::progress_state shown;
  shown.phase = "sft";
  shown.unit = "step";
  shown.total = static_cast<double>(s.steps);
  shown.limit_s = s.max_minutes * 60.0;
  const int64_t first_step = step;
  const double first_at = elapsed();
  while (step < s.steps && elapsed() < s.max_minutes * 60.0 && !stop_asked.load()) {
    // The order of examples is a function of the epoch, so a resumed run continues the same sequence.
    const int64_t per_epoch = std::max<int64_t>(1, static_cast<int64_t>(train.size()) / s.batch);
    const int64_t epoch = step / per_epoch, in_epoch = step % per_epoch;
    std::mt19937_64 rng(static_cast<uint64_t>(cfg.run.seed) * 7919u + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<policies::lm_example> batch;
    for (int64_t k = 0; k < s.batch; ++k)
      batch.push_back(train[order[(in_epoch * s.batch + k) % train.size()]]);
    // Each step on a thread of its own: the thread that loaded KernelBench tasks holds the embedded Python's
    // GIL, and with torch's Python bindings loaded the autograd engine refuses a caller that holds it.
    auto st = std::async(std::launch::async, [&] { return trainer.step(batch); }).get();
    if (!st) return make_error("sft: step " + std::to_string(step + 1) + ": " + st.message());
    ++step;
    if (out.loss_first == 0.0) out.loss_first = st->loss;
    out.loss_last = st->loss;
    tokens_since += static_cast<double>(st->tokens);
    metrics << nlohmann::json{{"step", step}, {"loss", st->loss},           {"tokens", st->tokens},
                              {"lr", st->lr}, {"grad_norm", st->grad_norm}, {"wall_s", elapsed()}}
                   .dump()
            << "\n";
    metrics.flush();
    if (live) {
      shown.done = static_cast<double>(step);
      shown.elapsed_s = shown.unit_at_s = elapsed();
      shown.per_unit_s = (shown.elapsed_s - first_at) / static_cast<double>(step - first_step);
      char detail[64];
      std::snprintf(detail, sizeof detail, "loss %.3f", st->loss);
      shown.detail = detail;
      live->update(shown);
    }
    if (step % every == 0 || step == s.steps) {
      const double dt = elapsed() - since;
      char line[160];
      std::snprintf(line, sizeof line, "sft step %lld/%lld  loss %.3f  lr %.2e  %.0f tokens/s  %.0f s",
                    static_cast<long long>(step), static_cast<long long>(s.steps), st->loss, st->lr,
                    dt > 0 ? tokens_since / dt : 0.0, elapsed());
      if (live)
        live->line(line);
      else
        std::printf("%s\n", line);
      std::fflush(stdout);
      tokens_since = 0;
      since = elapsed();
    }
    if (step % s.checkpoint_every == 0)
      if (auto c = checkpoint(); !c) return make_error("sft: checkpoint: " + c.message());
  }
  live.reset();
  if (auto c = checkpoint(); !c) return make_error("sft: checkpoint: " + c.message());
  if (stop_asked.load()) return make_error(sft_interrupted_note);
  if (auto st = policy->save(model_dir.string()); !st) return make_error("sft: " + st.message());
  out.model_dir = model_dir.string();
  out.steps = step;
  out.wall_s = elapsed();
  return out;
}

}  // namespace crucible::actors
