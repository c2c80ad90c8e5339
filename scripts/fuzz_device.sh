#!/usr/bin/env bash
# A time-limited differential fuzz run on a machine with a real GPU (e.g. the H100 machine):
#   scripts/fuzz_device.sh SEED SECONDS [JOBS]
# runs random programs from SEED on JOBS threads (default: the cores) for SECONDS, then prints
# the summary (programs run, same answers, same errors, disagreements by kind and signature,
# time per phase). Each call should use a new SEED: program i of seed S is always the same
# program, so two calls with one seed repeat each other. Exit 0 when no program disagreed.
#
# The test binary is built once (cargo test --no-run) and reused by later calls on the same
# machine. Where the machine has the NVIDIA driver but no Vulkan loader, run
# /work/shared/device/fetch-vulkan-loader.sh in the checkout first (it fills ./.gl); the
# packages there are unpacked into ./.gl/root and put on LD_LIBRARY_PATH.
set -euo pipefail
seed=${1:?usage: scripts/fuzz_device.sh SEED SECONDS [JOBS]}
seconds=${2:?usage: scripts/fuzz_device.sh SEED SECONDS [JOBS]}
jobs=${3:-$(nproc)}
cd "$(dirname "$0")/.."
if [ -d .gl ] && [ ! -d .gl/root ]; then
    for deb in .gl/*.deb; do dpkg-deb -x "$deb" .gl/root; done
fi
if [ -d .gl/root ]; then
    export LD_LIBRARY_PATH=$PWD/.gl/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
binary=$(cargo test --release --test differential_fuzz --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*differential_fuzz[^"]*\)".*/\1/p' | tail -1)
test -x "$binary" || { echo "could not build the differential_fuzz test" >&2; exit 1; }
HORSEC_FUZZ_SEED=$seed HORSEC_FUZZ_SECONDS=$seconds HORSEC_FUZZ_JOBS=$jobs \
    HORSEC_FUZZ_PROGRAMS=${HORSEC_FUZZ_PROGRAMS:-1000000000} HORSEC_FUZZ_SHRINK=${HORSEC_FUZZ_SHRINK:-1} \
    HORSEC_REQUIRE_GPU=1 "$binary" backends_agree_on_random_programs --nocapture
