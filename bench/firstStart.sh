#!/bin/bash
# usage: firststart.sh <checkout> <port> [node]: wall and CPU seconds from the start of the process to GET /ready = 200, on an empty DATA_DIR
cd "$1"; port=$2; node=${3:-node}
d=$(mktemp -d ${TMPDIR:-/tmp}/sb-first-start.XXXX); rm -rf "$d"
tck=$(getconf CLK_TCK)
start=$(date +%s.%N)
HTTP_PORT=$port DATA_DIR=$d $node --enable-source-maps dist/standalone.mjs > $d.log 2>&1 &
pid=$!
until curl -sf -o /dev/null http://127.0.0.1:$port/ready; do sleep 0.1; if ! kill -0 $pid 2>/dev/null; then echo died; tail $d.log; exit 1; fi; done
end=$(date +%s.%N)
cpu=$(awk -v t=$tck '{print ($14+$15)/t}' /proc/$pid/stat)
kill $pid; wait $pid 2>/dev/null
echo "wall $(echo "$end - $start" | bc | cut -c1-5) s cpu $cpu s load $(cut -d' ' -f1 /proc/loadavg)"
rm -rf "$d"
