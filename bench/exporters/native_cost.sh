#!/bin/sh
# Cost of with_stack: native on the example's median step, side by side:
# runs examples/train_mlp alternately with with_stack true and native (the
# sampler armed for every step: one window over the whole run), REPS times
# each, and prints the median of the example's own median step per mode.
#   bench/exporters/native_cost.sh [build dir] [reps] [steps]
B=${1:-build}; REPS=${2:-7}; STEPS=${3:-3000}
EX="$B/examples/train_mlp"
[ -x "$EX" ] || { echo "no $EX" >&2; exit 1; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
run() { # $1 = with_stack value
    "$EX" --quiet --max_steps "$STEPS" --profiling.log_dir "$T/$1" --profiling.log_every 0 \
        --profiling.wait 0 --profiling.warmup 0 --profiling.active "$STEPS" \
        --profiling.with_stack "$1" 2>/dev/null | sed -n 's/^median step \([0-9.]*\) us.*/\1/p'
}
i=0
while [ $i -lt "$REPS" ]; do
    run true >>"$T/true.txt"; run native >>"$T/native.txt"; i=$((i + 1))
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
n=$(cat "$T"/native/*/profiler_traces/*.native.stacks.txt | awk '{s+=$NF} END {print s+0}')
a=$(med "$T/true.txt"); b=$(med "$T/native.txt")
echo "median step: with_stack true $a us, native $b us ($(echo "$a $b" | awk '{printf "%+.1f%%", ($2/$1-1)*100}')); $REPS runs each, $STEPS steps, $n samples kept over the native runs"
