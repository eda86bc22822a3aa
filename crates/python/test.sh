#!/usr/bin/env bash
# The Python tests: builds the extension into the test virtualenv (maturin develop, a debug
# build in the workspace's target directory) and runs pytest. Arguments go to pytest.
# scripts/install-test-deps.sh makes the virtualenv; scripts/test.sh runs this.
set -euo pipefail
cd "$(dirname "$0")"
venv="$PWD/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "missing $venv: run bash scripts/install-test-deps.sh" >&2
  exit 1
fi
# Its chatter is shown only when the build fails.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --quiet >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
"$venv/bin/python" -m pytest -q tests "$@"
