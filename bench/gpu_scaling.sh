#!/usr/bin/env bash
# Evaluations per minute with one benchmarker per GPU, on 1 GPU and then on 2 GPUs of one host (issue 4):
# a head (configs/gpu.yaml with cluster.listen; compilers, generators and the learner on the head, no
# benchmarker of its own) and one node serving benchmarker=N on devices 0..N-1, each benchmarker with its
# own eval worker process. The same settings for both runs; only N changes. Prints a table.
#
#   bench/gpu_scaling.sh BUILD_DIR [MINUTES_PER_RUN] [OUT_DIR]
#
# Needs a CUDA build (-DCRUCIBLE_CUDA=ON) and two GPUs for the second row.
set -u
build=${1:?usage: bench/gpu_scaling.sh BUILD_DIR [MINUTES] [OUT_DIR]}
minutes=${2:-3}
out=${3:-/tmp/crucible-gpu-scaling}
rm -rf "$out" && mkdir -p "$out"
gpus=${GPUS:-$(nvidia-smi --list-gpus 2>/dev/null | wc -l)}  # GPUS/CONFIG: a dry run of the script on a CPU config
# The head's compiler pool is sized to the host (all but 6 cores) in both runs, so that compiling does not
# cap the two-GPU row; COMPILERS overrides it.
compilers=${COMPILERS:-$(( $(nproc) > 8 ? $(nproc) - 6 : 2 ))}
common=(--config "${CONFIG:-configs/gpu.yaml}" --set run.max_minutes="$minutes" --set run.progress=false
        --set async.groups_in_flight=16 --set run.shutdown_grace_s=20)
rows=()
for n in 1 2; do
  if [ "$n" -gt "$gpus" ]; then rows+=("| $n | (only $gpus GPU(s) here) | | | |"); continue; fi
  dir="$out/gpus$n"
  devices=$(seq -s, 0 $((n - 1)))
  smi=""
  if command -v nvidia-smi > /dev/null; then  # each GPU's busy fraction, sampled once a second
    nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -l 1 > "$dir.smi" 2>/dev/null &
    smi=$!
  fi
  "$build/crucible" train "${common[@]}" --set run.dir="$dir/head" --set cluster.listen=tcp://127.0.0.1:0 \
    --set roles.benchmarker=0 --set roles.compiler="$compilers" > "$dir.head.log" 2>&1 &
  head=$!
  for _ in $(seq 1 120); do [ -s "$dir/head/cluster_endpoint" ] && break; sleep 0.5; done
  ep=$(cat "$dir/head/cluster_endpoint")
  "$build/crucible" node "${common[@]}" --set run.dir="$dir" --join "$ep" --node-id "gpus$n" \
    --roles benchmarker="$n" --devices "$devices" > "$dir.node.log" 2>&1 &
  node=$!
  wait "$head"
  kill -TERM "$node" 2>/dev/null; wait "$node" 2>/dev/null
  busy="-"
  if [ -n "$smi" ]; then
    kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    # mean utilization of each GPU used, over the samples after the first busy one (start-up excluded)
    busy=$(awk -F', *' -v n="$n" '$1 < n { if ($2 > 0) on[$1] = 1; if (on[$1]) { s[$1] += $2; c[$1]++ } }
      END { for (i = 0; i < n; i++) printf "%s%d%%", (i ? " / " : ""), (c[i] ? s[i] / c[i] : 0) }' "$dir.smi")
  fi
  line=$(grep -Eo '[0-9]+ learner steps in [0-9]+ s: [0-9]+ candidates generated, [0-9]+ scored' "$dir.head.log" | tail -1)
  wall=$(echo "$line" | awk '{print $5}')
  scored=$(echo "$line" | awk '{print $10}')
  per_min=$(awk -v s="$scored" -v w="$wall" 'BEGIN { if (w > 0) printf "%.1f", 60 * s / w; else print "-" }')
  served=$(grep -Eo 'served [0-9]+ work items' "$dir.node.log" | awk '{print $2}')
  rows+=("| $n | $devices | $wall | $scored | $per_min | ${served:-?} | $busy |")
done
echo "compiler threads on the head: $compilers"
echo "| GPUs | devices | wall s | candidates scored | scored per minute | benchmark items served by the node | GPU busy (nvidia-smi) |"
echo "|------|---------|--------|-------------------|-------------------|------------------------------------|------|"
printf '%s\n' "${rows[@]}"
