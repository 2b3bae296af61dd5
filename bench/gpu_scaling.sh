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
common=(--config "${CONFIG:-configs/gpu.yaml}" --set run.max_minutes="$minutes" --set run.progress=false
        --set async.groups_in_flight=16 --set run.shutdown_grace_s=20)
rows=()
for n in 1 2; do
  if [ "$n" -gt "$gpus" ]; then rows+=("| $n | (only $gpus GPU(s) here) | | | |"); continue; fi
  dir="$out/gpus$n"
  devices=$(seq -s, 0 $((n - 1)))
  "$build/crucible" train "${common[@]}" --set run.dir="$dir/head" --set cluster.listen=tcp://127.0.0.1:0 \
    --set roles.benchmarker=0 > "$dir.head.log" 2>&1 &
  head=$!
  for _ in $(seq 1 120); do [ -s "$dir/head/cluster_endpoint" ] && break; sleep 0.5; done
  ep=$(cat "$dir/head/cluster_endpoint")
  "$build/crucible" node "${common[@]}" --set run.dir="$dir" --join "$ep" --node-id "gpus$n" \
    --roles benchmarker="$n" --devices "$devices" > "$dir.node.log" 2>&1 &
  node=$!
  wait "$head"
  kill -TERM "$node" 2>/dev/null; wait "$node" 2>/dev/null
  line=$(grep -Eo '[0-9]+ learner steps in [0-9]+ s: [0-9]+ candidates generated, [0-9]+ scored' "$dir.head.log" | tail -1)
  wall=$(echo "$line" | awk '{print $5}')
  scored=$(echo "$line" | awk '{print $10}')
  per_min=$(awk -v s="$scored" -v w="$wall" 'BEGIN { if (w > 0) printf "%.1f", 60 * s / w; else print "-" }')
  served=$(grep -Eo 'served [0-9]+ work items' "$dir.node.log" | awk '{print $2}')
  rows+=("| $n | $devices | $wall | $scored | $per_min | ${served:-?} |")
done
echo "| GPUs | devices | wall s | candidates scored | scored per minute | benchmark items served by the node |"
echo "|------|---------|--------|-------------------|-------------------|------------------------------------|"
printf '%s\n' "${rows[@]}"
