#!/usr/bin/env bash
# Sets up (or updates) the local virtualenv with the test tools, then runs the linter and
# the whole test suite. Real metadata logs are read from tests/data/kraft-real and, when
# present, from ../shared/fixtures/kraft-real (override with KRAFTLAKE_REAL_FIXTURES).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
# Setup is mostly download: Debian's packages install while pip fills the virtualenv, and
# Kafka's jars resolve while ruff and mypy check the code (`wait` fails the run with either)
ensure_debian_tools &
debian=$!
ensure_venv test
# Apache Kafka for tests/kafka (a real cluster as the ground truth), from Maven Central once
python -m kraftlake.jvm tests/kafka/poms/kafka-4.3.1.pom.xml tests/kafka/poms/kafka-3.9.1.pom.xml >/dev/null &
kafka_jars=$!
ruff check pipelines tests benchmarks
# pyproject.toml [tool.mypy]: kraft/, codec/ and fold/ strict, the rest checked. Its cache
# is the machine's, beside the JVM jars' (every clone checks the same modules: an entry
# whose file differs in time or place is used only when the file's hash is the same)
MYPY_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/kraftlake/mypy" mypy
wait "$kafka_jars"
wait "$debian"
# three workers on the two cores, each taking whole groups (tests/conftest.py says which and
# why three), longest first; the 30 slowest tests in every CI log
pytest -q -n 3 --no-loadscope-reorder --durations=30 "$@"
