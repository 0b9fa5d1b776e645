#!/usr/bin/env bash
# Re-resolve requirements/constraints.txt: a fresh Python 3.11 venv, the newest
# versions pyproject.toml allows for `isvm[dev]`, frozen. Run .ci/run afterwards
# (tables byte-identical to before? the floors step still passes?) and commit.
#   bash requirements/refresh-constraints.sh [python3.11]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3.11}
venv=$(mktemp -d "${TMPDIR:-/tmp}/isvm-lock.XXXXXX")
trap 'rm -rf "$venv"' EXIT
"$python" -m venv "$venv"
"$venv/bin/pip" install -q -e ".[dev]"
{
    grep '^#' requirements/constraints.txt | grep -v '^# Generated'
    echo "# Generated $(date -u +%Y-%m-%d) from $("$venv/bin/python" --version), pip $("$venv/bin/pip" --version | cut -d' ' -f2)."
    "$venv/bin/pip" freeze --exclude-editable | grep -v '^isvm'
} > requirements/constraints.txt.new
mv requirements/constraints.txt.new requirements/constraints.txt
git diff --stat requirements/constraints.txt
