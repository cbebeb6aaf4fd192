#!/usr/bin/env bash
# Sets up (or updates) the local virtualenv with the test tools, then runs the linter and
# the whole test suite. Real fixtures are read from ../shared/fixtures/kraft-real
# (override with KRAFTLAKE_REAL_FIXTURES).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
ensure_venv test
ensure_chromium
ruff check pipelines tests benchmarks
pytest -q "$@"
