#!/usr/bin/env bash
# The DDR tier is sized from what the host can give (MemAvailable: free memory plus the
# page cache the kernel reclaims), not from MemFree: a model whose file was just read into
# the page cache loads, spilling to DDR, with the tier at half of MemAvailable.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
LLM=$B/bin/tiermem-llm
MODEL=$SCRATCH/m.gguf
"$B/bin/tiermem-mkmodel" -o "$MODEL" --layers 4 --dim 256 --heads 4 --kv-heads 1 --ffn 768 --type f32 >/dev/null
check "the model was generated ($(($(stat -c %s "$MODEL") >> 20)) MiB)" test -s "$MODEL"

# bytes of a size as the interposer's log writes it ("10.85 GiB")
to_bytes() {
  awk -v v="$1" -v u="$2" 'BEGIN { m = u == "TiB" ? 2^40 : u == "GiB" ? 2^30 : u == "MiB" ? 2^20 : u == "KiB" ? 2^10 : 1
                                   printf "%.0f", v * m }'
}
kb() { awk -v k="$1:" '$1 == k { printf "%.0f", $2 * 1024 }' "$2"; }

# Read the file into the page cache, then load it at once on a device of 8 MiB.
cat "$MODEL" >/dev/null
available=$(kb MemAvailable /proc/meminfo)
node_free=$(awk '$3 == "MemFree:" { printf "%.0f", $4 * 1024 }' /sys/devices/system/node/node0/meminfo 2>/dev/null)
out=$(under_tiermem SIMCUDA_MEM=8M TIERMEM_LOG=info TIERMEM_POLICY=size -- \
  "$LLM" -m "$MODEL" -p "once upon a time" -n 4 --kv-dtype f16 --kv-blocks 16 2>&1)
rc=$?
check_eq "the model loads and generates right after its file was read" "$rc" 0
check "  spilling to DDR" grep -q 'HBM is full: an allocation of .* spilled .* to ddr' <<<"$out"
read -r value unit < <(sed -n 's/.*tiers: .* ddr \([0-9.]*\) \([KMGT]*i*B\) (node.*/\1 \2/p' <<<"$out" | head -n 1)
ddr=$(to_bytes "${value:-0}" "${unit:-B}")
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
if [ "$nodes" -le 1 ]; then
  # within 5%: MemAvailable moves while the engine starts
  check "the DDR tier is half of MemAvailable ($((ddr >> 20)) MiB against $((available >> 21)) MiB)" \
    awk -v d="$ddr" -v a="$available" 'BEGIN { exit !(d > 0.475 * a && d < 0.525 * a) }'
else
  skip "the DDR tier is half of MemAvailable" "$nodes NUMA nodes: the tier is node 0's share of it"
fi
if [ -n "$node_free" ] && awk -v a="$available" -v f="$node_free" 'BEGIN { exit !(a > 1.1 * f) }'; then
  check "  more than half of node 0's MemFree ($((node_free >> 21)) MiB): the page cache does not shrink it" \
    test "$ddr" -gt "$((node_free / 2 + node_free / 20))"
else
  skip "more than half of node 0's MemFree" "MemAvailable is within 10% of MemFree here: the page cache is too small to tell them apart"
fi
done_testing
