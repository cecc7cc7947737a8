#!/bin/bash
# A/B: pageable copy bandwidth of two builds on one machine, interleaved (rules out a regression
# hiding in run-to-run variance).
# usage (on the GPU machine, from the repository root): bench/ab-bandwidth.sh OLD_DIR NEW_DIR
#   each DIR holds cuda-server.jar, lib/, libcuda.so.1 and ivcuda-region-wait of one build; prints the pageable
#   bandwidth lines of bench/programs/bandwidth.c for old, new, old, new, then native.
set -u
old=${1:?OLD_DIR}; new=${2:?NEW_DIR}
export PATH=/usr/local/cuda/bin:$PATH
if ! command -v java >/dev/null; then mkdir -p /tmp/jre && tar xzf .jre/jre.tgz -C /tmp/jre && export PATH=/tmp/jre/bin:$PATH; fi
gcc -O2 -std=c11 -I bench/programs -I gpu/programs -I/usr/local/cuda/include bench/programs/bandwidth.c -o /tmp/bw -L/usr/local/cuda/lib64/stubs -lcuda -lpthread -lm || exit 1
for round in 1 2; do for dir in "$old" "$new"; do
  r=/dev/shm/ivcuda-ab; rm -f $r
  java -jar "$dir/cuda-server.jar" --set region.path=$r --set region.size=1073741824 > /tmp/ab-server.log 2>&1 &
  pid=$!
  "$dir/ivcuda-region-wait" --pid $pid $r 10 >/dev/null
  echo "== $dir round $round"
  IVCUDA_REGION=$r LD_LIBRARY_PATH=$dir /tmp/bw | grep pageable
  kill $pid; wait $pid 2>/dev/null; rm -f $r
done; done
echo "== native"; /tmp/bw | grep pageable
