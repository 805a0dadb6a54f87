#!/usr/bin/env bash
# One batch on the lent GPU machine (docs/gpu.md's recipe): the workbench's pick alone (bench_pick.py,
# no GL), its fly-and-pick bench with worker processes and without (each map's issue 48 figures are
# the log's "issue48" lines and the json's "issue48"), the workbench's parts in both looks at 1920x1080, and the rules'
# apply pinned to two cores. fly5: the flight at Python's own 5 ms GIL switch interval (the workbench's is 0.5 ms). Figures land flat in $OUT (json + logs).
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
# SITE, WOWGRASS_CACHE: where the wheels and the sample world go (apart when mutate_device.sh runs beside it)
SITE=${SITE:-/tmp/site}
python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 WOWGRASS_CACHE=${WOWGRASS_CACHE:-/tmp/wgcache} WOWGRASS_REALDATA=$PWD/.realdata
[ -e wowgrass/cli ] || ln -s ../cli wowgrass/cli
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
nvidia-smi -L; nproc
# RUNS="pick fly1": some of the runs only; GOUT: where the figures go (default $OUT)
G=${GOUT:-$OUT}; mkdir -p "$G"
run() {  # name, limit, command...
    local name=$1 limit=$2; shift 2
    [ -z "${RUNS:-}" ] || [[ " $RUNS " == *" $name "* ]] || return 0
    echo "== $name"; timeout "$limit" "$@" > "$G/$name.log" 2>&1; echo "rc=$?" >> "$G/$name.log"
    tail -25 "$G/$name.log"
    [ -f "/tmp/b/$name/workbench.json" ] && cp "/tmp/b/$name/workbench.json" "$G/$name.json"
}
W=benchmarks/bench_workbench.py
run pick 90 python3 benchmarks/bench_pick.py --json
run fly1 170 python3 $W --fly --skip edit,panels,pick,watch --size 1920x1080 --json --out /tmp/b/fly1
run fly5 170 python3 $W --fly --skip edit,panels,pick,watch --size 1920x1080 --switch-interval 0 --json --out /tmp/b/fly5
run fly0 150 python3 $W --fly --skip edit,panels,pick,watch --size 1920x1080 --workers 0 --json --out /tmp/b/fly0
run parts 110 python3 $W --size 1920x1080 --frames 120 --json --out /tmp/b/parts
run client 110 python3 $W --size 1920x1080 --frames 120 --look client --json --out /tmp/b/client
run rules2 120 taskset -c 0,1 python3 benchmarks/bench_rules.py --runs 2 --saves 20 --cells 30 --json "$G/rules2.json"
