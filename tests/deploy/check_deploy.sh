#!/usr/bin/env bash
# Checks the monitoring files under deploy/: the Prometheus configuration, recording and alert
# rules (with their unit tests), and the Grafana dashboard.
#
#   bash tests/deploy/check_deploy.sh      (from anywhere; CTest runs it as deploy_files)
#
# Needs promtool (Debian/Ubuntu: apt-get install prometheus) and python3. Without promtool it
# exits 77, which CTest reports as skipped rather than failed.
set -euo pipefail

if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP: promtool not found (install the prometheus package to check deploy/)"
  exit 77
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
prom="$root/deploy/prometheus"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '\n== %s\n' "$*"; }

step "prometheus.yml as shipped"
promtool check config "$prom/prometheus.yml"

# The HTTPS and scrape-token blocks ship commented out; turn every one on and check that the
# result still parses, so a commented block cannot rot. Syntax only: the CA and token files
# they name exist on a real Prometheus host, not here.
step "prometheus.yml with every optional block turned on"
awk '/# --- optional:/ { on = 1; print; next }
     /# --- end optional ---/ { on = 0; print; next }
     on { sub(/# /, "") }
     { print }' "$prom/prometheus.yml" >"$work/prometheus-all-options.yml"
for setting in 'scheme: https' 'ca_file:' 'credentials_file:'; do
  if ! grep -Eq "^ +${setting}" "$work/prometheus-all-options.yml"; then
    echo "FAIL: turning the optional blocks on did not enable '${setting}'"
    exit 1
  fi
done
promtool check config --syntax-only "$work/prometheus-all-options.yml"

step "rule files"
promtool check rules "$prom/recording_rules.yml" "$prom/alert_rules.yml"

step "rule unit tests"
promtool test rules "$prom"/tests/*.yml

step "dashboard JSON"
python3 -m json.tool "$root/deploy/grafana/trainyard-dashboard.json" >/dev/null
echo "valid JSON"
python3 "$root/tests/deploy/check_dashboard.py" "$root" --promql-out "$work/dashboard-queries.json"

step "dashboard PromQL syntax (each query parsed by promtool as a recording rule)"
promtool check rules "$work/dashboard-queries.json"

printf '\nAll deploy/ checks passed.\n'
