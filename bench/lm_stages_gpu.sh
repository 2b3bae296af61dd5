#!/usr/bin/env bash
# Issue 13's GPU figures in calls that fit the lent machine's 10-minute limit: the build, configs/lm.yaml from
# nothing (its stages resume across calls), and the LM throughput benches. Logs go to OUT_DIR.
#
#   bench/lm_stages_gpu.sh BUILD_DIR OUT_DIR RUN_DIR
#
# STEPS picks what runs (default: "build stages"); "stages" starts configs/lm.yaml in RUN_DIR, or resumes it
# when RUN_DIR holds it, and stops it (SIGINT: drained and checkpointed) after STAGE_SECONDS (default 420).
# "bench" runs bench/lm_sampling_bench and bench/lm_training_bench. On the lent GPU machine: source
# .device/setup.sh first (it sets CRUCIBLE_GPU_CMAKE).
set -u
build=${1:?usage: bench/lm_stages_gpu.sh BUILD_DIR OUT_DIR RUN_DIR}
out=${2:?usage: bench/lm_stages_gpu.sh BUILD_DIR OUT_DIR RUN_DIR}
run=${3:?usage: bench/lm_stages_gpu.sh BUILD_DIR OUT_DIR RUN_DIR}
mkdir -p "$out"
steps=" ${STEPS:-build stages} "
want() { [[ "$steps" == *" $1 "* ]]; }
step() { echo "== $1 ($(date -u +%H:%M:%S))"; }
if want build; then
  step build
  t0=$(date +%s)
  if [ ! -f "$build/crucible" ]; then
    cmake -S . -B "$build" ${CRUCIBLE_GPU_CMAKE:-} -DCMAKE_BUILD_TYPE=Release -DCRUCIBLE_CUDA=ON > "$out/build.log" 2>&1 ||
      { tail -50 "$out/build.log"; exit 1; }
  fi
  cmake --build "$build" -j"$(nproc)" --target crucible crucible-eval-worker test_policies_lm lm_sampling_bench \
    lm_training_bench >> "$out/build.log" 2>&1 || { grep -B2 -A12 "error" "$out/build.log" | head -80; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
if want tests; then
  step "lm tests"
  "$build/tests/test_policies_lm" > "$out/test_policies_lm.log" 2>&1
  tail -3 "$out/test_policies_lm.log"
fi
if want stages; then
  step "configs/lm.yaml in $run"
  if [ -f "$run/config.yaml" ]; then args="--resume $run"; else args="--config configs/lm.yaml --set run.dir=$run"; fi
  "$build/crucible" train $args > "$out/stages_$(date +%H%M%S).log" 2>&1 &
  pid=$!
  ( sleep "${STAGE_SECONDS:-420}"; kill -INT $pid 2>/dev/null ) &
  watcher=$!
  wait $pid
  echo "crucible train exited $?"
  kill $watcher 2>/dev/null
  tail -40 "$out"/stages_*.log | tail -60
  cp "$run"/stages.json "$out"/ 2>/dev/null
  for s in self_supervised contrastive; do cp "$run/stages/$s/report.json" "$out/report_$s.json" 2>/dev/null; done
  cp "$run/stages/sft/metrics.jsonl" "$out/sft_metrics.jsonl" 2>/dev/null
fi
if want bench; then
  step "sampling and training throughput"
  "$build/bench/lm_training_bench" --device cuda --dtype bf16 --shapes embedded,qwen0.5b --batches 1,8,64 \
    --prompt 512 --new 256 > "$out/lm_training_bench.txt" 2>&1
  cat "$out/lm_training_bench.txt"
fi
step done
