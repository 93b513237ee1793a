#!/usr/bin/env bash
# python/tests/ctest.sh: the Python package's tests as one ctest entry
# (python_package). Runs pytest over python/tests against this build
# (GEMMTUNE_BUILD_DIR); exits 77, which ctest reports as skipped, when the
# interpreter has no torch or pytest (scripts/test installs both from PyPI;
# GT_TEST_TORCH=0 skips that).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
if ! "$py" -c 'import torch, pytest' 2>/dev/null; then
  echo "SKIP: $py has no torch or pytest (pip install torch pytest)"
  exit 77
fi
export PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$(mktemp -d /tmp/gt-pytest.XXXXXX)"
exec "$py" -m pytest -q -p no:cacheprovider "$here"
