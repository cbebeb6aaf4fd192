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
  # The editable install imports kraftlake through a finder Python asks after every sys.path
  # entry, so in the clone's parent directory (the current directory is sys.path's first
  # entry) `import kraftlake` found the clone's own folder, `kraftlake/`, as an empty
  # namespace package. With pipelines/ on sys.path the package itself comes first (a regular
  # package wins over a namespace folder); the finder still maps kraftlake.schemas,
  # .expectations and .conf to the top-level folders (tests/test_packaging.py).
  local site
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  echo "$PWD/pipelines" > "$site/kraftlake-checkout.pth"
  export PATH="$PWD/.venv/bin:$PATH"
  export PYSPARK_PYTHON="$PWD/.venv/bin/python"
  # the pinned JVM jars (delta-spark, hadoop-aws), from Maven Central once; offline after
  .venv/bin/python -m kraftlake.jvm >/dev/null || exit 1
}

# The Data Docs test opens the quality report in a real headless Chromium (Debian's
# package). Install it when it is missing and we may (root with apt-get, as in CI).
ensure_chromium() {
  if command -v chromium >/dev/null; then
    return
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's chromium for the Data Docs browser test..."
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "note: no chromium on PATH; install Debian's chromium package" \
         "for the Data Docs browser test" >&2
  fi
}

ensure_prometheus() {
  # Debian's Prometheus server and promtool: the alert rules' checks and the test that lets
  # a real Prometheus scrape a stream (tests/metrics)
  if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
    return
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's prometheus for the live gauges' tests..."
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      prometheus >/dev/null
  else
    echo "note: no prometheus/promtool on PATH; install Debian's prometheus package" \
         "for the live gauges' tests" >&2
  fi
}
