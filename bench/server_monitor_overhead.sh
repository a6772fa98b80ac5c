#!/usr/bin/env bash
# The GPU monitor's cost in a real server: CPU time of `trainyard server` over
# SECS seconds with 8 GPUs of the fake NVML (loaded with dlopen, as the real
# one is) sampled every second, /metrics scraped every second and two jobs
# holding 4 GPUs each, once with the monitor and once without.
# Run from the repository root after building build-test:
#   SECS=180 bench/server_monitor_overhead.sh
set -euo pipefail
BIN=${BIN:-$PWD/build-test/trainyard}
LIB=${LIB:-$PWD/build-test/tests/fake_nvml/libnvidia-ml-fake.so}
SECS=${SECS:-60}
run() {
  local enabled=$1 dir
  dir=$(mktemp -d)
  printf 'gpu_monitor:\n  enabled: %s\n  sample_interval: 1s\n' "$enabled" > "$dir/config.yaml"
  FAKE_NVML_GPUS=8xA100-80GB FAKE_NVML_GPU_UTIL=50 "$BIN" server --listen 127.0.0.1:0 \
    --data-dir "$dir/data" --nvml-library "$LIB" --config "$dir/config.yaml" >"$dir/out" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [ -s "$dir/data/server.url" ] && break; sleep 0.1; done
  local url; url=$(cat "$dir/data/server.url")
  export TRAINYARD_TOKEN; TRAINYARD_TOKEN=$(cat "$dir/data/admin.token")
  for _ in 1 2; do "$BIN" --server "$url" submit --gpus 4 -- sleep 600 >/dev/null; done
  sleep 3
  local t0 t1; t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  for _ in $(seq "$SECS"); do curl -sf "$url/metrics" >/dev/null; sleep 1; done
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  local series; series=$(curl -sf "$url/metrics" | grep -vc '^#')
  echo "gpu_monitor.enabled=$enabled: $((t1 - t0)) ticks of CPU in ${SECS}s ($(getconf CLK_TCK)/s), $series series"
  for job in 1 2; do "$BIN" --server "$url" cancel "$job" >/dev/null || true; done
  sleep 2
  kill $pid; wait $pid 2>/dev/null || true
  rm -rf "$dir" || true
}
run true
run false
