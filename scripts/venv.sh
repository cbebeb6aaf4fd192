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
  # "compiled": the stamp of an install that wrote the packages' bytecode (older venvs did not)
  local stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)-compiled${extras:+-$extras}"
  local site
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  if [ ! -f "$stamp" ]; then
    echo "Installing kraftlake and its dependencies into .venv (first run takes a few minutes)..."
    # uv (from PyPI, into the venv) installs the same versions pip resolves, downloading in
    # parallel: 28 s against pip's 74 s on an empty cache (a fresh machine, as in CI)
    .venv/bin/python -m pip install --quiet uv
    # From uv's cache alone first (2 s for the test extras), online only when the cache lacks
    # a package. PyPI's files reach this machine without cache headers, so every online
    # install revalidated pyspark's sdist, found it "modified", downloaded and built it again
    # (about 28 s) and kept each build as a new cache revision (1-2 GB each: 67 GB of
    # ~/.cache/uv by 2026-12-04, until the disk was full). After an online install, `uv cache
    # prune` (it waits for other uv processes) drops the revisions it made stale.
    local spec=".${extras:+[$extras]}"
    if ! .venv/bin/uv pip install --quiet --offline --python .venv/bin/python -e "$spec" 2>/dev/null
    then
      .venv/bin/uv pip install --quiet --python .venv/bin/python -e "$spec"
      .venv/bin/uv cache prune --quiet
    fi
    # Every package's bytecode, written once here as pip writes it by default (uv does not):
    # where Python may not write it itself (PYTHONDONTWRITEBYTECODE, set on the machines
    # this project runs on), every process compiled each module it imported from source
    # (`import great_expectations` 8.7 CPU s against 3.8, pandas 1.8 against 0.5). The
    # packages' own tests are left out: nothing imports them, and they are a fifth of the files.
    .venv/bin/python -m compileall -q -j 0 -x '/tests?/' "$site" >/dev/null
    rm -f .venv/.installed-* && touch "$stamp"
  fi
  # kraftlake's own modules likewise (a module changed since is compiled again when imported)
  .venv/bin/python -m compileall -q pipelines >/dev/null
  # The editable install imports kraftlake through a finder Python asks after every sys.path
  # entry, so in the clone's parent directory (the current directory is sys.path's first
  # entry) `import kraftlake` found the clone's own folder, `kraftlake/`, as an empty
  # namespace package. With pipelines/ on sys.path the package itself comes first (a regular
  # package wins over a namespace folder); the finder still maps kraftlake.schemas,
  # .expectations and .conf to the top-level folders (tests/test_packaging.py).
  echo "$PWD/pipelines" > "$site/kraftlake-checkout.pth"
  export PATH="$PWD/.venv/bin:$PATH"
  export PYSPARK_PYTHON="$PWD/.venv/bin/python"
  # the pinned JVM jars (delta-spark, hadoop-aws), from Maven Central once; offline after
  .venv/bin/python -m kraftlake.jvm >/dev/null || exit 1
}

# Debian packages the tests use: a real headless Chromium opens the quality report (the Data
# Docs test); Prometheus's server and promtool check the alert rules and scrape a stream
# (tests/metrics). Installed when missing and we may (root with apt-get, as in CI), in one
# apt-get run; test.sh runs this beside the virtualenv's install (it is mostly download).
ensure_debian_tools() {
  local missing=()
  command -v chromium >/dev/null || missing+=(chromium)
  { command -v prometheus >/dev/null && command -v promtool >/dev/null; } || missing+=(prometheus)
  [ ${#missing[@]} -eq 0 ] && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's ${missing[*]} for the tests (Data Docs browser, live gauges)..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # Chromium with its recommended fonts; Prometheus without its recommended exporters
    if [[ " ${missing[*]} " == *" chromium "* ]]; then
      apt-get install -y -qq chromium >/dev/null
    fi
    if [[ " ${missing[*]} " == *" prometheus "* ]]; then
      apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    fi
  else
    echo "note: no ${missing[*]} on PATH; install Debian's package(s) of that name for" \
         "the Data Docs browser test and the live gauges' tests" >&2
  fi
}
