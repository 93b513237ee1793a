#!/usr/bin/env bash
# Proves the status page works in a real browser: headless Chromium loads /
# from a real coordinator with a finished run and two workers, runs app.js
# against the API, and the DOM it renders shows the run, every GEMM label
# with its uplift as GET /v1/runs/{id} reports it, the weighted uplift, both
# charts and the workers. Also takes a screenshot (checked to be a PNG).
# Exit 77 (skipped) when Chromium is missing and cannot be installed.
source "$(dirname "$0")/lib.sh"

find_chromium() { command -v chromium || command -v chromium-browser || true; }
CHROME=$(find_chromium)
if [ -z "$CHROME" ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo -n"
  { $sudo apt-get install -y -qq --no-install-recommends chromium ||
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium; }
  } >"$T/apt.log" 2>&1 || true
  CHROME=$(find_chromium)
fi
if [ -z "$CHROME" ]; then
  echo "skip: chromium is not installed and could not be installed"
  exit 77
fi

start_coordinator
start_worker w1
start_worker w2
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=page-run&budget=6&shard_size=3&min_time_ms=1&repeats=3&ncpu=1"
check "run finished" [ "$(wait_run "$RUN" 300)" = done ]
curl -sf "$HTTP/v1/runs/$RUN" -o "$T/run.json"

# Headless, isolated, no network beyond loopback. Virtual time lets the
# page's fetches and timers run, then the DOM is printed.
chrome() {
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$T/chrome-profile" --window-size=1400,1200 \
    --virtual-time-budget=8000 "$@" 2>>"$T/chrome.log"
}
chrome --dump-dom "$HTTP/" >"$T/dom.html" || true
check "the page rendered (DOM dumped)" grep -q '<h1>gemmtune</h1>' "$T/dom.html"
check "runs table lists the run" grep -q "<td>page-run</td>" "$T/dom.html"
check "the run is selected and shown" grep -q "Run $RUN · page-run" "$T/dom.html"
check "the run's progress reads 100 %" grep -q '100.0 %' "$T/dom.html"
missing=0
while IFS='|' read -r label uplift; do
  grep -qF "<td class=\"label\">$label</td>" "$T/dom.html" || { echo "  label missing: $label"; missing=$((missing + 1)); }
  grep -qF "<td class=\"num uplift\">$uplift</td>" "$T/dom.html" || { echo "  uplift missing: $label $uplift"; missing=$((missing + 1)); }
done < <(jsonq "$T/run.json" "SELECT json_extract(e.value, '$.label') || '|' || printf('%.2f×', json_extract(e.value, '$.uplift'))
                               FROM j, json_each(json_extract(j.x, '$.best')) e;")
check "every GEMM label and its uplift are in the table ($missing missing)" [ "$missing" = 0 ]
check "the table has one row per GEMM" [ "$(grep -o '<tr data-problem=' "$T/dom.html" | wc -l)" = 6 ]
wu=$(jsonq "$T/run.json" "SELECT printf('%.2f×', json_extract(x, '$.weighted_uplift')) FROM j;")
check "the weighted uplift ($wu) is shown" grep -qF "<dd>$wu</dd>" "$T/dom.html"
check "the uplift chart is drawn" grep -q 'aria-label="uplift per GEMM"' "$T/dom.html"
check "the timeline chart is drawn with lines" \
  bash -c "grep -q 'aria-label=\"best time over tuning time\"' '$T/dom.html' && grep -q '<path d=\"M' '$T/dom.html'"
check "both workers are listed" [ "$(grep -o '<tr data-worker=' "$T/dom.html" | wc -l)" = 2 ]
check "workers show their host and state" \
  bash -c "grep -qF '<td>$(hostname)</td>' '$T/dom.html' && grep -q 'badge s-idle\|badge s-busy' '$T/dom.html'"
check "no token form without a read token" grep -q '<form id="auth" class="card" hidden="">' "$T/dom.html"

chrome --screenshot="$T/page.png" "$HTTP/#run=$RUN" >/dev/null || true
check "screenshot is a PNG" bash -c "[ -s '$T/page.png' ] && head -c 8 '$T/page.png' | od -An -c | grep -q 'P   N   G'"
if [ -n "${GT_SCREENSHOT:-}" ]; then cp "$T/page.png" "$GT_SCREENSHOT"; fi

finish
