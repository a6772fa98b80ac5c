#!/usr/bin/env bash
# Set-up and everyday commands for Trainyard on Debian 12 / Ubuntu.
#   scripts/dev.sh run    install what is missing, build, start the server (127.0.0.1:8080, ./var)
#   scripts/dev.sh test   install what is missing, build, run every test (also an ASan+UBSan build)
#   scripts/dev.sh build  build only (Release, into ./build; the web UI into web/dist)
#   scripts/dev.sh deps   install the Debian packages only
set -euo pipefail
cd "$(dirname "$0")/.."

# Build and run needs; tests add podman, runc and busybox for container tests,
# openssl to make the certificates of the HTTPS tests and prometheus for
# promtool, which checks the /metrics exposition, and Chromium for the web
# UI's browser tests. The web UI itself is built with Node.js (20.19 or newer)
# and npm (11 or newer) from the npm registry.
BUILD_PKGS="build-essential cmake ninja-build pkg-config libcpp-httplib-dev nlohmann-json3-dev
  libyaml-cpp-dev libsqlite3-dev libcli11-dev libspdlog-dev libfmt-dev libssl-dev
  libsodium-dev prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev python3"
TEST_PKGS="podman runc busybox-static procps openssl prometheus chromium fonts-dejavu-core"
JOBS=${JOBS:-$(nproc)}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

deps() {
  local want="$BUILD_PKGS ${1:-}" missing=""
  for p in $want; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [ -z "$missing" ] && return 0
  echo "installing:$missing"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
}

configure() { # configure <dir> [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
}

build() {
  configure build -DCMAKE_BUILD_TYPE=Release -DTY_TESTS=OFF
  cmake --build build -j "$JOBS" --target trainyard
}

# Installs the web UI's npm packages when the lock file changed and builds it
# into web/dist when a source is newer than the build.
web() {
  local node_v npm_v
  node_v=$(node --version 2>/dev/null | sed 's/^v//') || true
  npm_v=$(npm --version 2>/dev/null) || true
  if [ -z "$node_v" ] || [ -z "$npm_v" ] ||
    ! printf '20.19.0\n%s\n' "$node_v" | sort -V -C ||
    ! printf '11.0.0\n%s\n' "$npm_v" | sort -V -C; then
    echo "the web UI needs Node.js >= 20.19 and npm >= 11 (found node '${node_v:-none}', npm '${npm_v:-none}')" >&2
    return 1
  fi
  local stamp=web/node_modules/.lock.sha256 sum
  sum=$(sha256sum web/package-lock.json | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
    (cd web && npm ci --no-audit --no-fund)
    echo "$sum" >"$stamp"
  fi
  if [ ! -f web/dist/index.html ] || [ -n "$(find web/src web/index.html web/vite.config.ts \
    web/package-lock.json web/scripts -newer web/dist/index.html -print -quit)" ]; then
    (cd web && npm run build)
  fi
}

run() {
  deps
  build
  # Without a built UI the server still starts and its pages say how to build it.
  web || echo "web UI not built: the API works, the browser pages explain what is missing" >&2
  local args=(--listen "${TRAINYARD_LISTEN:-127.0.0.1:8080}" --data-dir "${TRAINYARD_DATA:-./var}")
  if [ -n "${TRAINYARD_FAKE_GPUS:-}" ]; then
    args+=(--fake-gpus "$TRAINYARD_FAKE_GPUS")
  elif ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    echo "no NVIDIA driver here: simulating 4 GPUs (set TRAINYARD_FAKE_GPUS to change)"
    args+=(--fake-gpus 4xA100-80GB)
  fi
  exec build/trainyard server "${args[@]}"
}

test_all() {
  deps "$TEST_PKGS"
  web
  # Warnings are errors here and in CI.
  configure build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTY_WERROR=ON
  cmake --build build-test -j "$JOBS"
  (cd build-test && ctest --output-on-failure -j "$JOBS" --timeout 300)
  # The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer.
  configure build-asan -DCMAKE_BUILD_TYPE=Debug -DTY_WERROR=ON -DTY_SANITIZE=ON -DTY_E2E=OFF -DTY_BENCH=OFF \
    -DTY_WEB_TESTS=OFF
  cmake --build build-asan -j "$JOBS"
  (cd build-asan && ctest --output-on-failure -j "$JOBS" --timeout 300)
}

case "${1:-}" in
  deps) deps "$TEST_PKGS" ;;
  build) deps; build; web ;;
  run) run ;;
  test) test_all ;;
  *) sed -n '2,6p' "$0"; exit 2 ;;
esac
