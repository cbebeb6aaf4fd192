# Shared by demo.sh and test.sh: create or update .venv from pyproject.toml, only when the
# project's dependencies changed since the last install.
ensure_venv() {
  local extras="${1:-}"
  local py="${PYTHON:-python3}"
  if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "kraftlake needs Python 3.11 or newer ($py is $("$py" --version 2>&1))" >&2
    exit 1
  fi
  command -v java >/dev/null || { echo "kraftlake needs Java 17 (Spark) on the PATH" >&2; exit 1; }
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  local stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)${extras:+-$extras}"
  if [ ! -f "$stamp" ]; then
    echo "Installing kraftlake and its dependencies into .venv (first run takes a few minutes)..."
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".${extras:+[$extras]}"
    rm -f .venv/.installed-* && touch "$stamp"
  fi
  export PATH="$PWD/.venv/bin:$PATH"
  export PYSPARK_PYTHON="$PWD/.venv/bin/python"
}
