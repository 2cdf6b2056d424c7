#!/usr/bin/env bash
# The grown hotpot_test's three runs: the baseline, the default agent, and the agent with CHAIN_CHECK on.
# On two cores without native bfloat16 they take about 30 hours, so they run over many sittings and many
# machines: each run resumes where it stopped, and `save` keeps its progress in the repository
# (benchmarks/agent_vs_baseline/hotpot_test/in_progress/, gzipped), from where the next machine restores it.
#
#   bash scripts/hotpot_test_runs.sh          # restore what is saved and not here, then run (or resume) all three
#   bash scripts/hotpot_test_runs.sh save     # write the run folders' progress and the LLM cache into in_progress/
#                                             (stop the runs first, then commit it)
#
# The agent and the CHAIN_CHECK agent share one LLM cache, so the second recomputes only the calls the chain
# check changes (a replay is exact). When the three are done, in_progress/ can go: the finished rows, the
# comparisons and the overview are in benchmarks/agent_vs_baseline/hotpot_test/.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=artifacts/runs/agent_vs_baseline
SAVED=benchmarks/agent_vs_baseline/hotpot_test/in_progress
CACHE=artifacts/runs/hotpot_test_llm_cache.sqlite
FILES="results.jsonl config.json telemetry.jsonl"
FOLDERS="baseline agent agent_chain_check"

case "${1:-}" in
  ""|save) ;;
  *) echo "error: unknown argument '$1' (give none to run, or 'save')" >&2; exit 2 ;;
esac

if [ "${1:-}" = save ]; then
  for run in $FOLDERS; do
    [ -s "$RUNS/hotpot_test/$run/results.jsonl" ] || continue
    mkdir -p "$SAVED/$run"
    for f in $FILES; do
      [ -f "$RUNS/hotpot_test/$run/$f" ] && gzip -9 -n -c "$RUNS/hotpot_test/$run/$f" > "$SAVED/$run/$f.gz"
    done
    echo "$run: $(wc -l < "$RUNS/hotpot_test/$run/results.jsonl") results saved in $SAVED/$run"
  done
  # the agent's calls, which the CHAIN_CHECK agent replays: lost with the machine, they would cost hours again
  [ -s "$CACHE" ] && gzip -9 -n -c "$CACHE" > "$SAVED/llm_cache.sqlite.gz" && echo "LLM cache saved in $SAVED"
  exit 0
fi

for run in $FOLDERS; do
  if [ -s "$SAVED/$run/results.jsonl.gz" ] && [ ! -s "$RUNS/hotpot_test/$run/results.jsonl" ]; then
    mkdir -p "$RUNS/hotpot_test/$run"
    for f in $FILES; do
      [ -f "$SAVED/$run/$f.gz" ] && gunzip -c "$SAVED/$run/$f.gz" > "$RUNS/hotpot_test/$run/$f"
    done
    echo "$run: $(wc -l < "$RUNS/hotpot_test/$run/results.jsonl") results restored from $SAVED/$run"
  fi
done

if [ -s "$SAVED/llm_cache.sqlite.gz" ] && [ ! -s "$CACHE" ]; then
  gunzip -c "$SAVED/llm_cache.sqlite.gz" > "$CACHE" && echo "LLM cache restored from $SAVED"
fi

python scripts/bench_agent_vs_baseline.py --datasets hotpot_test --systems baseline agent agent_chain_check --resume \
  --override "LLM_CACHE_PATH=$CACHE"
