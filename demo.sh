#!/usr/bin/env bash
# Sets up (or updates) the local virtualenv, then runs kraftlake's main job on the
# embedded default: a small real 3-broker KRaft metadata log shipped in examples/.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh
ensure_venv
kraftlake decode examples/real-3-broker
echo
kraftlake decode examples/real-3-broker --count
