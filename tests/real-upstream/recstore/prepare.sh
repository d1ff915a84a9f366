#!/bin/bash
# Prepare a CPU machine (Debian 12) to build and run the real RecStore through `expr run`.
#
#   EXPR_RECSTORE_REPO=/path/to/RecStore tests/real-upstream/recstore/prepare.sh [STEP...]
#
# EXPR_RECSTORE_REPO is a RecStore checkout with its third_party sources present (`git clone
# --recursive`, or lay-sources.sh beside this file). The dependencies RecStore does not build itself
# (fmt 10, folly, brpc, cpptrace, cityhash) are built once into a cache outside the checkout,
# EXPR_RECSTORE_CACHE (default /var/cache/expr-recstore), in a folder keyed by their source commits
# (or, without git, a digest of their file lists). SPDK (with DPDK and ISA-L) and cityhash are also
# built inside the checkout's third_party, where RecStore's link flags and rs_demo's Python look for
# them. Every step leaves a stamp and a log: an interrupted run starts again at the first step
# without a stamp. Cold ~17 min at -j2 on 2 cores; warm, seconds.
#
# It prints, last, the environment an experiment needs (the file env.sh in the key folder).
# Steps (all when none is named): apt fmt folly brpc cpptrace cityhash spdk venv shims layout data
set -euo pipefail
REPO=${EXPR_RECSTORE_REPO:?a RecStore checkout with its third_party sources}
REPO=$(cd "$REPO" && pwd)
CACHE=${EXPR_RECSTORE_CACHE:-/var/cache/expr-recstore}
J=${EXPR_RECSTORE_JOBS:-$(nproc)}
TORCH_VERSION=2.7.1
TORCHREC_VERSION=1.2.0
TP=$REPO/third_party
SP=$TP/spdk
# DPDK's and SPDK's build scripts need a python3 with pyelftools: Debian's, first on PATH.
export PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH

for d in folly brpc cpptrace fmt cityhash spdk spdk/dpdk spdk/isa-l spdk/isa-l-crypto jemalloc googletest json; do
  if [ -z "$(ls -A "$TP/$d" 2>/dev/null)" ]; then
    echo "prepare: $TP/$d is empty: the checkout needs its submodules (git submodule update --init --recursive, or lay-sources.sh)" >&2
    exit 2
  fi
done

# The key: the sources of what goes into the cache.
key_of() { # a commit when git knows the folder, else a digest of its file list and sizes
  local d=$1
  if git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1 \
     && c=$(git -C "$REPO" ls-tree HEAD "third_party/$d" 2>/dev/null | awk '{print $3}') && [ -n "$c" ]; then
    echo "$d=$c"
  elif [ -f "$TP/$d/.expr-laid" ]; then
    echo "$d=$(cat "$TP/$d/.expr-laid")"
  else
    echo "$d=$(cd "$TP/$d" && find . -type f -printf '%P %s\n' | LC_ALL=C sort | sha256sum | cut -c1-16)"
  fi
}
KEY=$( { for d in fmt folly brpc cpptrace cityhash; do key_of $d; done; } | sha256sum | cut -c1-12)
K=$CACHE/deps-$KEY
DEPS=$K/prefix
BLD=$K/build
LOGS=$K/logs
STAMPS=$K/stamps
VENV=$CACHE/venv-torch$TORCH_VERSION-torchrec$TORCHREC_VERSION
PY=$VENV/bin/python
mkdir -p "$DEPS" "$BLD" "$LOGS" "$STAMPS"
{ for d in fmt folly brpc cpptrace cityhash; do key_of $d; done; } > "$K/sources.txt"

# LIBDWARF: cpptrace v0.3.1 FetchContent's libdwarf-lite; without network it must be given.
LIBDWARF=${EXPR_RECSTORE_LIBDWARF:-$TP/libdwarf-lite}

# libjemalloc-dev: folly must be configured with FOLLY_USE_JEMALLOC (see verify_folly);
# nlohmann-json3-dev: src/test/server_mgr (the ctest gate's launcher) includes <nlohmann/json.hpp>
# without linking the checkout's third_party/json. Both were on the machine of the hand-run recipe.
step_apt() {
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config git autoconf automake libtool \
    libgflags-dev libgoogle-glog-dev libssl-dev libboost-all-dev libevent-dev libdouble-conversion-dev libzstd-dev liblz4-dev libsnappy-dev \
    libunwind-dev libprotobuf-dev libprotoc-dev protobuf-compiler libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libleveldb-dev \
    python3-venv python3-pip python3-dev libiberty-dev libaio-dev liburing-dev libnuma-dev uuid-dev libfuse3-dev libncurses-dev libcunit1-dev \
    nasm yasm meson python3-pyelftools libelf-dev libdwarf-dev libsodium-dev liblzma-dev libbz2-dev zlib1g-dev libtbb-dev libcurl4-openssl-dev \
    libjson-c-dev libkeyutils-dev help2man python3-setuptools libgoogle-perftools-dev libmemcached-dev \
    libjemalloc-dev nlohmann-json3-dev
  if dpkg -s libfmt-dev >/dev/null 2>&1; then
    echo "prepare: libfmt-dev (fmt 9) is installed; RecStore needs fmt 10 and was never built beside it: apt-get remove libfmt-dev" >&2
    return 1
  fi
}
step_fmt() {
  cmake -S "$TP/fmt" -B "$BLD/fmt" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DFMT_TEST=OFF -DFMT_DOC=OFF -DCMAKE_INSTALL_PREFIX="$DEPS/fmt"
  cmake --build "$BLD/fmt" -j"$J" && cmake --install "$BLD/fmt"
}
step_folly() {
  rm -f "$BLD/folly/CMakeCache.txt"   # its header checks are cached: a package installed since counts
  cmake -S "$TP/folly" -B "$BLD/folly" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_CXX_STANDARD=17 -DCMAKE_PREFIX_PATH="$DEPS/fmt" -DCMAKE_INSTALL_PREFIX="$DEPS/folly"
  cmake --build "$BLD/folly" -j"$J" && cmake --install "$BLD/folly"
}
# folly must see jemalloc's header (FOLLY_USE_JEMALLOC): without it folly/portability/Malloc.h
# includes <malloc.h>, which in RecStore's targets is RecStore's own src/memory/malloc.h
# (`-I src/memory`), and ps_server does not compile ("'kInt32Max' was not declared").
verify_folly() { grep -q '^#define FOLLY_USE_JEMALLOC 1' "$DEPS/folly/include/folly/folly-config.h" 2>/dev/null; }
step_brpc() {
  # an out-of-tree copy: brpc's CMake writes generated files into its source folder
  rm -rf "$BLD/brpc-src"; cp -a "$TP/brpc" "$BLD/brpc-src"
  cmake -S "$BLD/brpc-src" -B "$BLD/brpc" -DCMAKE_BUILD_TYPE=Release -DWITH_GLOG=ON -DWITH_DEBUG_SYMBOLS=OFF -DBUILD_BRPC_TOOLS=OFF -DDOWNLOAD_GTEST=OFF -DCMAKE_INSTALL_PREFIX="$DEPS/brpc"
  cmake --build "$BLD/brpc" -j"$J" && cmake --install "$BLD/brpc"
}
step_cpptrace() {
  [ -d "$LIBDWARF" ] || { echo "prepare: no libdwarf-lite source at $LIBDWARF (EXPR_RECSTORE_LIBDWARF)" >&2; return 1; }
  cmake -S "$TP/cpptrace" -B "$BLD/cpptrace" -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DFETCHCONTENT_SOURCE_DIR_LIBDWARF="$LIBDWARF" -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DCMAKE_INSTALL_PREFIX="$DEPS/cpptrace"
  cmake --build "$BLD/cpptrace" -j"$J" && cmake --install "$BLD/cpptrace"
}
step_cityhash() { # in the checkout: rs_demo's Python dlopens third_party/cityhash/src/.libs/libcityhash.so.0.0.0
  cd "$TP/cityhash"
  ./configure --prefix="$DEPS/cityhash" --with-pic CXXFLAGS="-g -O3 -fPIC" && make -j"$J" && make install
  test -f "$TP/cityhash/src/.libs/libcityhash.so.0.0.0"
}
step_spdk() { # in the checkout: RecStore links from third_party/spdk/{build/lib,dpdk/build/lib,isa-l/.libs}
  cd "$SP"
  ./configure --disable-tests --disable-unit-tests --disable-examples --disable-apps --without-nvme-cuse --without-fsdev --without-vhost --without-virtio
  make -j"$J"
  test -f "$SP/dpdk/build/lib/librte_log.so"
}
step_venv() {
  [ -x "$PY" ] || /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" pybind11 numpy
  # TorchRec on CPU: the CPU build of fbgemm-gpu provides the fbgemm_gpu module; both without their
  # dependencies (which would bring the CUDA fbgemm-gpu), then what they need besides torch.
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "torchrec==$TORCHREC_VERSION" "fbgemm-gpu-cpu==$TORCHREC_VERSION" tensordict==0.8.3 torchmetrics==1.0.3
  local extra
  extra=$("$PY" - <<'PY'
import importlib.metadata as m, re
skip = {"torch", "fbgemm-gpu", "fbgemm_gpu", "numpy"}
want = set()
for dist in ("torchrec", "tensordict", "torchmetrics"):
    for r in m.requires(dist) or []:
        if "extra ==" in r:
            continue
        name = re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0]
        if name.lower() not in skip:
            want.add(r.split(";")[0].strip())
print("\n".join(sorted(want)))
PY
)
  # shellcheck disable=SC2086
  [ -z "$extra" ] || echo "$extra" | xargs -d '\n' "$VENV/bin/pip" install -q --disable-pip-version-check
  "$PY" -c "import torch, torchrec, fbgemm_gpu; print('torch', torch.__version__, 'torchrec', torchrec.__version__, 'cuda', torch.cuda.is_available())"
}
step_shims() {
  local S=$DEPS/shims/lib/cmake T
  mkdir -p "$S/protobuf" "$S/Torch"
  cat > "$S/protobuf/protobuf-config.cmake" <<'EOS'
# Debian's libprotobuf-dev 3.21 ships no protobuf-config.cmake: CMake's FindProtobuf gives the same targets.
include(${CMAKE_ROOT}/Modules/FindProtobuf.cmake)
set(protobuf_FOUND ${Protobuf_FOUND})
EOS
  T=$("$PY" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')/torch
  cat > "$S/Torch/TorchConfig.cmake" <<EOS
# The PyPI torch wheel is the CUDA build and its Caffe2Config wants a CUDA toolkit: import c10 and torch_cpu only.
set(_TORCH_ROOT "$T")
set(TORCH_INCLUDE_DIRS "\${_TORCH_ROOT}/include;\${_TORCH_ROOT}/include/torch/csrc/api/include")
if(NOT TARGET c10)
  add_library(c10 SHARED IMPORTED)
  set_target_properties(c10 PROPERTIES IMPORTED_LOCATION "\${_TORCH_ROOT}/lib/libc10.so" INTERFACE_INCLUDE_DIRECTORIES "\${TORCH_INCLUDE_DIRS}")
  add_library(torch_cpu SHARED IMPORTED)
  set_target_properties(torch_cpu PROPERTIES IMPORTED_LOCATION "\${_TORCH_ROOT}/lib/libtorch_cpu.so" INTERFACE_INCLUDE_DIRECTORIES "\${TORCH_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES c10 INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1")
  add_library(torch INTERFACE IMPORTED)
  set_target_properties(torch PROPERTIES INTERFACE_LINK_LIBRARIES "torch_cpu;c10" INTERFACE_INCLUDE_DIRECTORIES "\${TORCH_INCLUDE_DIRS}")
endif()
set(TORCH_LIBRARIES torch)
set(TORCH_LIBRARY "\${_TORCH_ROOT}/lib/libtorch_cpu.so")
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")
set(Torch_FOUND TRUE)
EOS
}
step_layout() { # the fixed NO_DEFAULT_PATH folders src/ps/brpc/CMakeLists.txt:1-2 reads
  cd "$TP"
  ln -sfn "$DEPS/brpc" brpc-install
  mkdir -p protobuf-install/include protobuf-install/lib
  ln -sfn /usr/include/google protobuf-install/include/google   # only google/: an -I/usr/include breaks #include_next
  for f in /usr/lib/x86_64-linux-gnu/libprotobuf.so*; do ln -sfn "$f" protobuf-install/lib/; done
}
step_data() { # day-0 inputs the runners read by default: N x 13 dense float32, N x 26 ids below the table, N labels
  local D=$REPO/model_zoo/torchrec_dlrm/processed_day_0_data N=${EXPR_RECSTORE_ROWS:-20000} T=${EXPR_RECSTORE_TABLE:-1000}
  mkdir -p "$D"
  "$PY" - "$D" "$N" "$T" <<'PY'
import sys, numpy as np
d, n, t = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = np.random.default_rng(0)
np.save(f"{d}/day_0_dense.npy", r.random((n, 13), dtype=np.float32))
np.save(f"{d}/day_0_sparse.npy", r.integers(0, t, (n, 26), dtype=np.int64))
np.save(f"{d}/day_0_labels.npy", r.integers(0, 2, (n,)).astype(np.float32))
print(f"data: {n} rows, ids below {t}, in {d}")
PY
}

ALL=(apt fmt folly brpc cpptrace cityhash spdk venv shims layout data)
STEPS=("$@"); [ ${#STEPS[@]} -gt 0 ] || STEPS=("${ALL[@]}")
echo "prepare: checkout $REPO, cache $K, -j$J"
for s in "${STEPS[@]}"; do
  declare -F "step_$s" >/dev/null || { echo "prepare: no step '$s' (steps: ${ALL[*]})" >&2; exit 2; }
  # steps whose output lies in the checkout or the venv are stamped there too (a fresh checkout redoes them)
  case $s in cityhash|spdk|layout|data) stamp=$REPO/.expr-prepare-$s.ok ;; venv) stamp=$VENV/.expr-prepare.ok ;; *) stamp=$STAMPS/$s.ok ;; esac
  if [ -f "$stamp" ] && [ "$s" != apt ]; then
    if ! declare -F "verify_$s" >/dev/null || "verify_$s"; then echo "prepare: $s done ($(cat "$stamp"))"; continue; fi
    echo "prepare: $s was done by an earlier recipe and does not verify: again"; rm -f "$stamp"
  fi
  t0=$(date +%s); echo "prepare: $s … (log $LOGS/$s.log)"
  if ( set -e; "step_$s"; if declare -F "verify_$s" >/dev/null; then "verify_$s"; fi ) >"$LOGS/$s.log" 2>&1; then
    echo "$(( $(date +%s) - t0 )) s, $(date -u +%FT%TZ)" > "$stamp"
    echo "prepare: $s ok in $(( $(date +%s) - t0 )) s"
  else
    echo "prepare: $s FAILED after $(( $(date +%s) - t0 )) s; the log's tail:" >&2
    tail -n 30 "$LOGS/$s.log" >&2
    exit 1
  fi
done

PYBIND=$("$PY" -m pybind11 --cmakedir 2>/dev/null || true)
{
  echo "# What an experiment needs to build and run RecStore at $REPO (written by prepare.sh; source it)"
  for kv in "EXPR_RECSTORE_REPO=$REPO" "EXPR_RECSTORE_DEPS=$DEPS" "EXPR_RECSTORE_PYTHON=$PY" \
            "EXPR_RECSTORE_PREFIX_PATH=$DEPS/shims;$DEPS/folly;$DEPS/fmt;$DEPS/cpptrace;$DEPS/cityhash" \
            "EXPR_RECSTORE_PYBIND11_DIR=$PYBIND" \
            "EXPR_RECSTORE_PKG_CONFIG_PATH=$SP/build/lib/pkgconfig:$SP/dpdk/build/lib/pkgconfig" \
            "EXPR_RECSTORE_RPATH=$SP/dpdk/build/lib"; do
    printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
  done
} > "$K/env.sh"
ln -sfn "$K/env.sh" "$CACHE/env.sh"
echo "prepare: done; the environment for an experiment is $CACHE/env.sh:"
cat "$K/env.sh"
