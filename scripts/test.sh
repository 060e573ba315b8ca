#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: sets up first (scripts/setup.sh), then runs
# pytest over tests/ (browser tests included). Fails if no test ran (pytest exit 5). The log ends
# with the 15 slowest tests (--durations=15) and pytest's wall time: CI's limit is 90 min.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export JUPYTER_PLATFORM_DIRS=1 SE_OFFLINE=true
mkdir -p artifacts
set +e
start=$(date +%s)
.venv/bin/python -m pytest tests --durations=15 "$@" --junitxml=artifacts/junit.xml
rc=$?
wall=$(( $(date +%s) - start ))
set -e
echo "test: pytest took ${wall} s ($(( wall / 60 )) min $(( wall % 60 )) s) wall time"
if [ "$rc" = 5 ]; then echo "test: pytest collected no tests" >&2; exit 1; fi
if [ "$rc" = 0 ]; then
  ran=$(.venv/bin/python -c "import xml.etree.ElementTree as E; r=E.parse('artifacts/junit.xml').getroot(); s=r if r.tag=='testsuite' else r[0]; print(int(s.get('tests'))-int(s.get('skipped')))")
  echo "test: $ran tests ran"
  if [ "$ran" -lt 1 ]; then echo "test: no test ran" >&2; exit 1; fi
fi
exit "$rc"
