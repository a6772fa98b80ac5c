#!/usr/bin/env bash
# Runs one part of the web UI's tests from CTest: typecheck, unit (Vitest in
# jsdom) or e2e (a real browser against a real server). The web UI's
# dependencies and build come from `scripts/dev.sh test` (npm ci, vite build).
set -euo pipefail
cd "$(dirname "$0")/../../web"
if [ ! -d node_modules ]; then
  echo "web/node_modules is missing: run scripts/dev.sh test (it runs npm ci in web/)" >&2
  exit 1
fi
case "${1:-}" in
  typecheck) exec npx --no-install tsc --noEmit ;;
  unit) exec npx --no-install vitest run --maxWorkers=2 --reporter=dot ;;
  e2e)
    if [ ! -f dist/index.html ]; then
      echo "web/dist is missing: run scripts/dev.sh test (it builds the web UI)" >&2
      exit 1
    fi
    if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
      echo "Chromium is missing: apt-get install chromium (scripts/dev.sh test installs it)" >&2
      exit 1
    fi
    exec node --test --test-reporter=spec e2e/ ;;
  *) echo "usage: $0 typecheck|unit|e2e" >&2; exit 2 ;;
esac
