#!/usr/bin/env bash
# The GPU figures of the verifier (issue 11), in one go on a CUDA machine: build with -DCRUCIBLE_CUDA=ON, the
# gpu-labelled tests, the CUDA corpus (detection per class, false flags), throughput (evaluations per
# GPU-minute, cold and warm) at each checked share given, and the timing fidelity bench. Logs go to OUT_DIR.
#
#   bench/gpu_verifier.sh BUILD_DIR OUT_DIR [SHARES]     e.g. SHARES="0.25 0.125"
#
# Each throughput run, and the fidelity bench, also write every evaluation's notes (notes_*.jsonl).
# GATES picks the launch gates to measure throughput with (default: device; see below).
# STEPS picks a subset (default: "build tests corpus throughput fidelity"), for machines whose calls are short.
# On the lent GPU machine: source .device/setup.sh first (it sets CRUCIBLE_GPU_CMAKE).
set -u
build=${1:?usage: bench/gpu_verifier.sh BUILD_DIR OUT_DIR [SHARES]}
out=${2:?usage: bench/gpu_verifier.sh BUILD_DIR OUT_DIR [SHARES]}
shares=${3:-0.25}
mkdir -p "$out"
steps=" ${STEPS:-build tests corpus throughput fidelity} "
want() { [[ "$steps" == *" $1 "* ]]; }
step() { echo "== $1 ($(date -u +%H:%M:%S))"; }
if want build; then
  step build
  t0=$(date +%s)
  cmake -S . -B "$build" ${CRUCIBLE_GPU_CMAKE:-} -DCMAKE_BUILD_TYPE=Release -DCRUCIBLE_CUDA=ON > "$out/build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" >> "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
if want tests; then
  step "gpu tests"
  ctest --test-dir "$build" -L gpu --output-on-failure > "$out/ctest_gpu.log" 2>&1
  grep -E "tests passed|tests failed|\(Failed\)|Total Test time" "$out/ctest_gpu.log"
fi
if want corpus; then
  step "cuda corpus"
  "$build/bench/verifier_corpus_bench" --target cuda --json "$out/corpus_cuda.json" > "$out/corpus_cuda.txt" 2>&1
  tail -40 "$out/corpus_cuda.txt"
fi
# GATES="device wait stream" measures the launch gate side by side in three forms: the hold fills every SM and
# the call's stream waits in a one-thread kernel (device, the default); the same hold with a stream memory
# wait instead (wait); only the stream held, by a stream memory wait (stream).
if want throughput; then
  for gate in ${GATES:-device}; do
    for share in $shares; do
      step "throughput, checked_share $share, launch gate $gate"
      CRUCIBLE_LAUNCH_GATE=$gate CRUCIBLE_BENCH_NOTES="$out/notes_${share}_$gate.jsonl" \
        "$build/bench/cuda_eval_bench" throughput 1 14 benchmark.checked_share="$share" \
        > "$out/throughput_${share}_$gate.txt" 2>&1
      tail -14 "$out/throughput_${share}_$gate.txt"
    done
  done
fi
if want fidelity; then
  step fidelity
  CRUCIBLE_BENCH_NOTES="$out/notes_fidelity.jsonl" "$build/bench/cuda_eval_bench" fidelity 10 "$out/fidelity.json" \
    > "$out/fidelity.txt" 2>&1
  tail -12 "$out/fidelity.txt"
fi
step done
