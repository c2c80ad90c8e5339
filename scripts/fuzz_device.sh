#!/usr/bin/env bash
# A time-limited differential fuzz run on a machine with a real GPU (e.g. the H100 machine).
#
#   scripts/fuzz_device.sh prepare
#       (here, on the development machine) builds the fuzzer's test binary and copies it to
#       target/fuzz/differential_fuzz (12 MB), so a device run can carry it instead of
#       building on the device: run(carry=["target/fuzz"], ...).
#   scripts/fuzz_device.sh SEED SECONDS [JOBS]
#       runs random programs from SEED on JOBS threads (default: the cores) for SECONDS, then
#       prints the summary: programs run, same answers, same errors (both refused),
#       disagreements by kind and by signature, the time per phase (compiling pipelines
#       apart). Use a new SEED for each call: program i of seed S is always the same program.
#       Exit 0 when no program disagreed.
#
# The binary is target/fuzz/differential_fuzz when present, else built with cargo. Where the
# machine has the NVIDIA driver but no Vulkan loader, run /work/shared/device/fetch-vulkan-loader.sh
# in the checkout first (it fills ./.gl, also carried); its packages are unpacked into
# ./.gl/root and put on LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
build() {
    cargo test --release --test differential_fuzz --no-run --message-format=json 2>/dev/null \
        | sed -n 's/.*"executable":"\([^"]*differential_fuzz[^"]*\)".*/\1/p' | tail -1
}
if [ "${1:-}" = prepare ]; then
    binary=$(build)
    test -x "$binary" || { echo "could not build the differential_fuzz test" >&2; exit 1; }
    mkdir -p target/fuzz
    cp "$binary" target/fuzz/differential_fuzz
    ls -l target/fuzz/differential_fuzz
    exit 0
fi
seed=${1:?usage: scripts/fuzz_device.sh prepare | SEED SECONDS [JOBS]}
seconds=${2:?usage: scripts/fuzz_device.sh prepare | SEED SECONDS [JOBS]}
jobs=${3:-$(nproc)}
if [ -d .gl ] && [ ! -d .gl/root ]; then
    for deb in .gl/*.deb; do dpkg-deb -x "$deb" .gl/root; done
fi
if [ -d .gl/root ]; then
    export LD_LIBRARY_PATH=$PWD/.gl/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
binary=target/fuzz/differential_fuzz
if [ ! -x "$binary" ]; then
    binary=$(build)
fi
test -x "$binary" || { echo "could not build the differential_fuzz test" >&2; exit 1; }
export CARGO_MANIFEST_DIR=$PWD
HORSEC_FUZZ_SEED=$seed HORSEC_FUZZ_SECONDS=$seconds HORSEC_FUZZ_JOBS=$jobs \
    HORSEC_FUZZ_PROGRAMS=${HORSEC_FUZZ_PROGRAMS:-1000000000} \
    HORSEC_FUZZ_SHRINK=${HORSEC_FUZZ_SHRINK:-1} HORSEC_REQUIRE_GPU=1 \
    "$binary" backends_agree_on_random_programs --nocapture
