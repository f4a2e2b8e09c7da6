#!/usr/bin/env bash
# Compile the llama-cpp-python that a requirements file pins, for this CPU but without AMX, into
# the Python given:  scripts/install-llama.sh PYTHON REQUIREMENTS
# llama.cpp builds with -march=native; on a Xeon with AMX (in a virtual machine) its AMX weight
# repacking crashed the embedded server with SIGSEGV while it loaded the model, and the AVX-512
# and AVX2 kernels run it fine. Explicit -mno-amx-* win over -march=native whatever their order.
# Compiled afresh each time (no pip wheel cache, which keys a built wheel by version, not flags).
set -euo pipefail
python=$1 requirements=$2
spec=$(grep -E '^llama-cpp-python' "$requirements")
flags=""
[ "$(uname -m)" = x86_64 ] && flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
CFLAGS="${CFLAGS:-} $flags" CXXFLAGS="${CXXFLAGS:-} $flags" \
  "$python" -m pip install -q --no-cache-dir --force-reinstall --no-deps "$spec"
