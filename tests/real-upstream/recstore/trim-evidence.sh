#!/bin/bash
# Copy what matters of a real RecStore result directory (a few hundred KB): the reports, the
# deployment and commands, the per-rank CSVs and configs, and the tails of the logs.
#   trim-evidence.sh RESULT_DIR DEST
set -euo pipefail
src=$1 dst=$2
mkdir -p "$dst"
for f in summary.md summary_e2e.csv metrics.csv summary.json deployment.md commands.sh manifest.csv preflight.json; do
  [ -f "$src/$f" ] && cp "$src/$f" "$dst/"
done
( cd "$src" && find outputs runtime -type f \( -name '*_main.csv' -o -name '*_main_agg.csv' -o -name 'recstore_config.json' -o -name '*_ranks' \) 2>/dev/null ) |
  while read -r f; do mkdir -p "$dst/$(dirname "$f")"; cp "$src/$f" "$dst/$f"; done
mkdir -p "$dst/logs"
for f in "$src"/logs/*.log; do
  [ -f "$f" ] && tail -n 40 "$f" > "$dst/logs/$(basename "$f").tail"
done
du -sh "$dst"
