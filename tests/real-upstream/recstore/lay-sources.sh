#!/bin/bash
# Lay out a RecStore checkout with its third_party sources from bare git snapshots of the public
# repositories, for a machine where `git clone --recursive` cannot reach GitHub. A user with network
# access does not need this: `git clone --recursive https://github.com/wurenrumian/RecStore` and check
# out the commit below.
#
#   SNAPSHOTS=/work/.mirror DEST=/var/cache/expr-recstore/checkout ./lay-sources.sh
#
# SNAPSHOTS holds one bare repository per public repository as <owner>+<name>/repo. The commits are
# RecStore's own submodule pins (`git ls-tree <commit> third_party/`), except where SPDK's pins are
# not public (see ../shared/reference/recstore-cpu-build.md): those substitutes are marked.
# Nothing of it goes into expr's repository.
set -euo pipefail
SNAPSHOTS=${SNAPSHOTS:?folder of bare snapshots, <owner>+<name>/repo}
DEST=${DEST:?where the RecStore checkout goes}
RECSTORE_COMMIT=${RECSTORE_COMMIT:-2fb8d826370697df66d174aa1a620230f1b977c1}

lay() { # lay DIR OWNER+NAME COMMIT
  local dir=$1 repo=$SNAPSHOTS/$2/repo commit=$3
  [ -d "$repo" ] || { echo "lay-sources: no snapshot $repo" >&2; exit 2; }
  if [ -f "$dir/.expr-laid" ] && [ "$(cat "$dir/.expr-laid")" = "$2@$commit" ]; then
    echo "lay-sources: $dir already at $2@$commit"; return; fi
  rm -rf "$dir"; mkdir -p "$dir"
  git --git-dir="$repo" archive "$commit" | tar -x -C "$dir"
  echo "$2@$commit" > "$dir/.expr-laid"
  echo "lay-sources: $dir <- $2@$commit"
}
pin() { git --git-dir="$SNAPSHOTS/wurenrumian+RecStore/repo" ls-tree "$RECSTORE_COMMIT" "third_party/$1" | awk '{print $3}'; }

if [ ! -f "$DEST/.expr-laid" ] || [ "$(cat "$DEST/.expr-laid")" != "wurenrumian+RecStore@$RECSTORE_COMMIT" ]; then
  lay "$DEST" wurenrumian+RecStore "$RECSTORE_COMMIT"
fi
TP=$DEST/third_party
lay "$TP/folly"      facebook+folly          "$(pin folly)"
lay "$TP/brpc"       apache+brpc             "$(pin brpc)"
lay "$TP/cpptrace"   jeremy-rifkin+cpptrace  "$(pin cpptrace)"
lay "$TP/fmt"        fmtlib+fmt              "$(pin fmt)"
lay "$TP/googletest" google+googletest       "$(pin googletest)"
lay "$TP/json"       nlohmann+json           "$(pin json)"
lay "$TP/jemalloc"   jemalloc+jemalloc       "$(pin jemalloc)"
lay "$TP/cityhash"   google+cityhash         "$(pin cityhash)"
# jemalloc's autoconf wants a version when the tree has no .git
echo "5.2.1-91-g$(pin jemalloc)" > "$TP/jemalloc/VERSION"
lay "$TP/spdk"       spdk+spdk               "$(pin spdk)"
lay "$TP/spdk/dpdk"  DPDK+dpdk               v25.07    # SPDK's pin spdk/dpdk 48b18008 is not public
lay "$TP/spdk/isa-l" intel+isa-l             v2.31.1   # SPDK's pin spdk/isa-l 6f420b14 is not public
lay "$TP/spdk/isa-l-crypto" intel+isa-l_crypto 9b7a2b842c9f4e54b8dc1c82899e5a5520c53301  # SPDK's pin (v2.25.0)
# cpptrace v0.3.1 fetches libdwarf-lite at configure time; prepare.sh gives it this source instead
lay "$TP/libdwarf-lite" jeremy-rifkin+libdwarf-lite c78e984f3abbd20f6e01d6f51819e826b1691f65
echo "lay-sources: $DEST ready (RecStore $RECSTORE_COMMIT)"
