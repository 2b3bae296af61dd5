#!/usr/bin/env bash
# Issue 14's GPU figures (KernelBench under Crucible's protocol, beside KernelBench's own harness), resumable
# across calls and sessions: every report lives in REPORTS (default bench/kernelbench/GPU_NAME, committed),
# each run goes on from it (--resume) and no step starts after the deadline, so that 10-minute calls add up
# to levels 1 and 2.
#
#   bench/kernelbench_gpu.sh BUILD_DIR KB_CHECKOUT OUT_DIR
#
# STEPS (default "build aa1 aa2"), in the order given:
#   build              cmake -DCRUCIBLE_CUDA=ON with the machine's Python, the binaries these steps use
#   aa1 aa2            crucible rejudge --aa on level 1 / 2 (each problem as its own candidate)
#   haa1 haa2          KernelBench's harness, the same A/A (bench/kernelbench_harness.py aa)
#   cl1 cl2 cl3        CUDA-L1's released kernels (CUDAL1_JSON, their optimized_cuda_code/h100.json) re-judged
#   hcl1 hcl2 hcl3     KernelBench's harness on the same kernels
#   tests              the KernelBench GPU tests, a training run's included (GTF: a gtest filter, default all)
#   corpus             the CUDA verifier corpus (bench/verifier_corpus_bench --target cuda)
# BUDGET: seconds from the start after which no step starts; a running step is stopped there (default 540).
# IDS1, IDS2, IDS3: problem ids per level, comma-separated (default: all). FORK=off: benchmark.fork_modules=false,
# a fresh worker per candidate (the path before forking; its reports get the suffix _nofork).
# COMPILE (default on): the A/A steps also time the reference under torch.compile (default and
# reduce-overhead), so that one pass gives the A/A deviation and every baseline; CUDA-L1's steps never do
# (their evaluations per minute are the figure to set beside the harness's, which compiles nothing).
# COMPILE=off: A/A reports get the suffix _nocompile (a resumed report keeps its kernels as they were, so
# one without compile baselines must not stand for one with them).
# SETS: more `--set KEY=VALUE` options for Crucible's steps (e.g. benchmark.charge_reference_tails=false);
# give such a run a REPORTS folder of its own.
# On the lent GPU machine: source .device/setup.sh first (it sets CRUCIBLE_GPU_CMAKE). OUT_DIR gets two files
# (the lent machine returns few): reports.tgz (every report, and side_by_side_*.md for each pair both tools
# measured, memory_*.md and order_*.md for each of Crucible's reports) and logs.tgz; the last lines of each
# step's log and each table are printed.
set -u
usage="usage: bench/kernelbench_gpu.sh BUILD_DIR KB_CHECKOUT OUT_DIR"
build=${1:?$usage}
kb=${2:?$usage}
out=${3:?$usage}
# One folder per device: a report is one device's (crucible rejudge --resume refuses another's).
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr -c 'A-Za-z0-9\n' '_' |
  tr 'A-Z' 'a-z')
reports=${REPORTS:-bench/kernelbench/${gpu:-no_gpu}}
mkdir -p "$out" "$reports"
logs=$(mktemp -d)
t_start=$(date +%s)
budget=${BUDGET:-540}
steps=${STEPS:-build aa1 aa2}
suffix=$([ "${FORK:-on}" = off ] && echo _nofork || echo "")
fork_set=$([ "${FORK:-on}" = off ] && echo "--set benchmark.fork_modules=false" || echo "")
left() { echo $((budget - ($(date +%s) - t_start))); }
step() { echo "== $1 ($(date -u +%H:%M:%S), $(left) s left)"; }
ids_of() { local v="IDS$1"; [ -n "${!v:-}" ] && echo "--ids ${!v}"; }

# CUDA-L1's kernels need time for load_inline builds (about a minute each, torch's headers).
rejudge() {  # rejudge LEVEL REPORT [INPUT | --aa] [MORE --set ...]
  local level=$1 report=$2 input=$3 more=${4:-}
  # shellcheck disable=SC2046
  timeout --signal=TERM --kill-after=10 "$(left)" "$build/crucible" rejudge "$input" --kernelbench "$kb" \
    --level "$level" $(ids_of "$level") --target cuda --json "$reports/$report" --resume \
    --set benchmark.timeout_s=150 --set dispatch.stage_timeout_s=240 $fork_set $more ${SETS:-} \
    > "$logs/${report%.json}.log" 2>&1
  echo "exit $?"; grep -E "^\[[0-9]+/[0-9]+\]" "$logs/${report%.json}.log" | tail -n 40
}
harness() {  # harness MODE LEVEL REPORT [RELEASE.json]
  local mode=$1 level=$2 report=$3 release=${4:-}
  # shellcheck disable=SC2046
  timeout --signal=TERM --kill-after=10 "$(left)" python3 bench/kernelbench_harness.py "$mode" $release "$kb" \
    --level "$level" $(ids_of "$level") --json "$reports/$report" --resume > "$logs/${report%.json}.log" 2>&1
  echo "exit $?"; grep -E "^\[[0-9]+/[0-9]+\]" "$logs/${report%.json}.log" | tail -n 40
}
side_by_side() {  # side_by_side CRUCIBLE.json HARNESS.json
  [ -f "$reports/$1" ] && [ -f "$reports/$2" ] || return 0
  echo "== side by side: $1, $2"
  python3 bench/kernelbench_side_by_side.py "$reports/$1" "$reports/$2" \
    --markdown "$reports/side_by_side_${1%.json}.md" > /dev/null && tail -n 8 "$reports/side_by_side_${1%.json}.md"
}

for s in $steps; do
  if [ "$(left)" -le 20 ]; then
    echo "== $s: not started, the budget is spent"
    continue
  fi
  step "$s"
  case $s in
    build)
      t0=$(date +%s)
      cmake -S . -B "$build" ${CRUCIBLE_GPU_CMAKE:-} -DCMAKE_BUILD_TYPE=Release -DCRUCIBLE_CUDA=ON \
        -DPython3_EXECUTABLE="$(command -v python3)" \
        -Dpybind11_DIR="$(python3 -c 'import pybind11; print(pybind11.get_cmake_dir())')" > "$logs/build.log" 2>&1 &&
        cmake --build "$build" -j"$(nproc)" --target crucible crucible-eval-worker crucible-kernelbench-host \
          crucible-candidate-host test_kernels_python_cuda test_cli_cuda >> "$logs/build.log" 2>&1 ||
        { tail -n 40 "$logs/build.log"; tar czf "$out/logs.tgz" -C "$logs" .; exit 1; }
      echo "build: $(($(date +%s) - t0)) s"
      ;;
    aa1 | aa2)
      compile=$([ "${COMPILE:-on}" = on ] && echo "--set benchmark.compile_baselines=true" || echo "")
      aa_suffix=$suffix$([ "${COMPILE:-on}" = on ] || echo _nocompile)
      rejudge "${s#aa}" "aa_l${s#aa}$aa_suffix.json" --aa "$compile"
      ;;
    haa1 | haa2) harness aa "${s#haa}" "harness_aa_l${s#haa}.json" ;;
    cl1 | cl2 | cl3)
      rejudge "${s#cl}" "cudal1_h100_l${s#cl}$suffix.json" "${CUDAL1_JSON:?set CUDAL1_JSON to the h100.json of CUDA-L1}"
      ;;
    hcl1 | hcl2 | hcl3) harness cudal1 "${s#hcl}" "harness_cudal1_h100_l${s#hcl}.json" "${CUDAL1_JSON:?set CUDAL1_JSON}" ;;
    tests)
      for t in test_kernels_python_cuda test_cli_cuda; do
        timeout "$(left)" "$build/tests/$t" --gtest_filter="${GTF:-*}" >> "$logs/tests.log" 2>&1
        echo "$t: exit $?"
      done
      grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|PASSED|FAILED" "$logs/tests.log" | tail -n 30
      ;;
    corpus)
      cmake --build "$build" -j"$(nproc)" --target verifier_corpus_bench > "$logs/corpus.log" 2>&1 &&
        timeout "$(left)" "$build/bench/verifier_corpus_bench" --target cuda >> "$logs/corpus.log" 2>&1
      echo "corpus: exit $?"; tail -n 12 "$logs/corpus.log"
      ;;
    *) echo "unknown step '$s'" ;;
  esac
  tar czf "$out/reports.tgz" -C "$reports" . && tar czf "$out/logs.tgz" -C "$logs" .
done
for level in 1 2 3; do
  for c in "" _nocompile; do side_by_side "aa_l$level$suffix$c.json" "harness_aa_l$level.json"; done
  side_by_side "cudal1_h100_l$level$suffix.json" "harness_cudal1_h100_l$level.json"
  # What each evaluation held on the device against the memory plan (bench/kernelbench_memory.py).
  for r in "aa_l$level$suffix.json" "aa_l$level${suffix}_nocompile.json" "cudal1_h100_l$level$suffix.json"; do
    [ -f "$reports/$r" ] && python3 bench/kernelbench_memory.py "$reports/$r" --markdown "$reports/memory_${r%.json}.md" |
      tail -n 1
    # What a place in the trials costs, each side's (bench/kernelbench_order.py): the A/A's bias read.
    [ -f "$reports/$r" ] && python3 bench/kernelbench_order.py "$reports/$r" --markdown "$reports/order_${r%.json}.md" |
      tail -n 12
  done
done
tar czf "$out/reports.tgz" -C "$reports" . && tar czf "$out/logs.tgz" -C "$logs" .
step done
