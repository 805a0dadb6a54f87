#!/usr/bin/env bash
# `make mutate` on a many-core machine (the lent GPU machine has 16): every module at once, each with
# its share of the cores, stopped after MINUTES; the results (mutmut's meta files and each module's
# mutated file, enough for `mutmut show`) come back as $OUT/mutate-state.tar.gz and the figures as
# $OUT/mutate.json. A mutate-state.tar.gz in .mutstate/ (an earlier run's) is unpacked first, so a
# second run goes on from the first: with SURVIVORS=1 it tries only the survivors again (new tests).
# Wheels: .whl (the runtime) and .whl-mut (mutmut, pytest, hypothesis) for the machine's python 3.12.
set -u
MINUTES=${MINUTES:-8}
SITE=${SITE:-/tmp/site}   # SITE, WOWGRASS_CACHE: apart from gpu_batch.sh's when both run at once
python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl .whl-mut/*.whl 2>&1 | tail -2
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 WOWGRASS_CACHE=${WOWGRASS_CACHE:-/tmp/wgcache} WOWGRASS_REALDATA=$PWD/.realdata
# a real folder (mutmut copies files, not links); made once, before gpu_batch.sh may run beside it
[ -d wowgrass/cli ] && [ ! -L wowgrass/cli ] || { rm -rf wowgrass/cli; cp -r cli wowgrass/cli; }
nproc
rm -rf build/mutate
[ -f .mutstate/mutate-state.tar.gz ] && tar -xzf .mutstate/mutate-state.tar.gz
# a warm sample world before the modules fork (each would build its own)
python3 -c "from wowgrass.grass.bake import default_data; default_data()" || exit 1
extra=""; [ "${SURVIVORS:-0}" = 1 ] && extra="--survivors"
# cores by size of module (mutants x the tests' time)
for mj in ${JOBS:-light:4 placement:3 session:3 adt_edit:2 fileio:1 masks:1 capacity:1 history:1}; do
    m=${mj%%:*}; j=${mj##*:}
    # a temporary folder each: pytest prunes the older numbered folders of others in a shared one
    mkdir -p "/tmp/mut-$m"; TMPDIR="/tmp/mut-$m" python3 benchmarks/mutate.py $extra --jobs "$j" --minutes "$MINUTES" "$m" > "/tmp/mutate-$m.log" 2>&1 &
done
wait
for f in /tmp/mutate-*.log; do echo "== $f"; tail -40 "$f"; done > "$OUT/mutate-logs.txt"
python3 benchmarks/mutate.py --report --json "$OUT/mutate.json" | grep -v "survived:"
# per module: the meta files, the stats and the mutated file itself (mutmut show reads it)
files=()
for d in build/mutate/*/; do
    m=$(basename "$d")
    f=$(python3 -c "import sys; sys.path.insert(0,'benchmarks'); import mutate; print(mutate.MODULES['$m']['file'])")
    for p in "mutants/$f" "mutants/$f.meta" "mutants/mutmut-stats.json"; do
        [ -e "$d$p" ] && files+=("$d$p")
    done
done
tar -czf "$OUT/mutate-state.tar.gz" "${files[@]}"
ls -la "$OUT"
