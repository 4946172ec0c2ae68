#!/usr/bin/env bash
# scripts/setup, its stderr a pipe (as in CI logs), says that a long build goes on: a progress line
# at least every SYSTOLIC_SETUP_PROGRESS_SECONDS. A stand-in cmake (first on PATH) takes the
# configure step at once and makes the build last 4 s; the packages must already be installed.
#   setup_progress_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/bin"
cat >"$scratch/bin/cmake" <<'FAKE'
#!/usr/bin/env bash
if [ "${1:-}" = "--build" ]; then
  for pct in 10 40 70 100; do printf "[%3d%%] Building CXX object stand-in\n" "$pct"; sleep 1; done
fi
exit 0
FAKE
chmod +x "$scratch/bin/cmake"
# Exactly the example's packages must be there, as after any set-up; otherwise this would install.
PATH="$scratch/bin:$PATH" SYSTOLIC_BUILD_DIR="$scratch/build" SYSTOLIC_SETUP_PROGRESS_SECONDS=1 \
  "$src/scripts/setup" --example 2>&1 </dev/null | cat >"$scratch/stderr"
cat "$scratch/stderr"
lines=$(grep -c '^setup: building \[ *[0-9]*%\], [0-9]* s so far$' "$scratch/stderr" || true)
if [ "$lines" -lt 2 ]; then
  echo "setup_progress_test: $lines progress lines in a 4 s build at one every second; want at least 2"
  exit 1
fi
echo "setup_progress_test: $lines progress lines"
