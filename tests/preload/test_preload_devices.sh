#!/usr/bin/env bash
# Every device a process uses is tiered (simcuda with SIMCUDA_DEVICES=2): a stray context
# on device 0 does not keep device 1's allocations from being tiered there; each device
# has its own HBM limit (TIERMEM_HBM_LIMIT=0:SIZE,1:SIZE) and its own figures in the stats
# region; peer access the program enables reaches tiered ranges of the other device.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
DEVICES=$B/tests/preload/devices
# Per-device placement as `size` places it (`heat` takes its staging ring on the first device
# set up, the stray one here, and rebalances that device only)
SIM=(SIMCUDA_DEVICES=2 SIMCUDA_MEM=128M,96M TIERMEM_POLICY=size)
MIB=$((1 << 20))
device_field() { jq -r ".devices[] | select(.ordinal == $2) | .$3" <<<"$1"; }

# held RUN-NAME ENV... -- MODE SIZE: runs the program held, keeps its stats as JSON in $JSON
held() {
  local name=$1; shift
  JSON=""
  if start_held "$@"; then JSON=$("$TIERMEM_STAT" --json "$HELD_PID" 2>&1); fi
  release_held
  check_eq "$name: the program exits 0" "$HELD_RC" 0
  relay_tap "$name" "$HELD_OUT"
}

# --- without the interposer, every mode runs and keeps its data
for mode in stray both; do
  touch "$SCRATCH/go"
  without_tiermem "${SIM[@]}" -- "$DEVICES" $mode 48M "$SCRATCH/go" >"$SCRATCH/$mode.direct" 2>&1
  check_eq "without tiermem, $mode runs" "$?" 0
  relay_tap "without tiermem, $mode" "$SCRATCH/$mode.direct"
  rm -f "$SCRATCH/go"
done

# --- a stray context on device 0, then the real work on device 1
held "stray" "${SIM[@]}" TIERMEM_HBM_LIMIT=0:64M,1:32M -- "$DEVICES" stray 48M
check_eq "device 1 is tiered: its own entry with its own limit" "$(device_field "$JSON" 1 hbm_limit)" $((32 * MIB))
check "device 1 holds no more HBM than its limit" test "$(device_field "$JSON" 1 hbm_used)" -le $((32 * MIB))
check "the 48 MiB allocation on device 1 is chunked and spilled below its HBM" \
  test "$(jq '[.allocations[] | select(.size == 50331648) | .chunks.ddr] | add // 0' <<<"$JSON")" -gt 0
check_eq "the stray context's small allocation is counted on device 0" "$(device_field "$JSON" 0 hbm_used)" 4096

# --- each device its own limit
held "both" "${SIM[@]}" TIERMEM_HBM_LIMIT=0:64M,1:32M -- "$DEVICES" both 48M
check_eq "device 0 (64 MiB) keeps all 48 MiB in HBM" "$(device_field "$JSON" 0 hbm_used)" $((48 * MIB))
check "device 1 (32 MiB) keeps at most its limit in HBM" test "$(device_field "$JSON" 1 hbm_used)" -le $((32 * MIB))
check_eq "the two devices' HBM adds up to the process's hbm tier" \
  "$(( $(device_field "$JSON" 0 hbm_used) + $(device_field "$JSON" 1 hbm_used) ))" "$(json_tier "$JSON" hbm used)"
held "one limit for all" "${SIM[@]}" TIERMEM_HBM_LIMIT=40M -- "$DEVICES" both 48M
check_eq "TIERMEM_HBM_LIMIT=40M limits device 0 to it" "$(device_field "$JSON" 0 hbm_limit)" $((40 * MIB))
check_eq "and device 1" "$(device_field "$JSON" 1 hbm_limit)" $((40 * MIB))
held "a device not named" "${SIM[@]}" TIERMEM_HBM_LIMIT=1:32M -- "$DEVICES" both 48M
check_eq "TIERMEM_HBM_LIMIT=1:32M leaves device 0 its memory" "$(device_field "$JSON" 0 hbm_limit)" $((128 * MIB))

# --- peer access reads through a tiered range from the other device's context
held "peer" "${SIM[@]}" TIERMEM_HBM_LIMIT=0:64M,1:32M -- "$DEVICES" peer 48M
check "before peer access, device 0 cannot read device 1's chunks (their access is device 1's)" \
  grep -q '^behaviour: before peer access: CUDA_ERROR_INVALID_VALUE' "$HELD_OUT"

# --- bad per-device limits are refused in one line
for bad in 0:64M,0:32M 2x:1G 1:lots 64:1G; do
  out=$(under_tiermem "${SIM[@]}" TIERMEM_HBM_LIMIT=$bad -- "$PROBE" exit 0 2>&1)
  check "TIERMEM_HBM_LIMIT=$bad is refused in one line" \
    grep -q "^tiermem: TIERMEM_HBM_LIMIT='$bad' is not valid: expected .*DEVICE:SIZE" <<<"$out"
done
done_testing
