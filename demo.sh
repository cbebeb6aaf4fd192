#!/usr/bin/env bash
# Sets up (or updates) the local virtualenv, then runs kraftlake's main job on the embedded
# default: simulate a 6-broker KRaft cluster with incidents (real metadata-log bytes), ingest
# it into a local Delta lake with Spark, and print the incidents found, checked against the
# simulator's ground truth.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
ensure_venv
kraftlake demo "$@"
