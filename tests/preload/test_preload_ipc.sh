#!/usr/bin/env bash
# Legacy CUDA IPC between two processes (ipc_peer): tiered memory shared through tiermem's
# own handles, both ways; either side killed with SIGKILL and the other cleaning up; forged
# handles and handles of dead exporters refused with a clear line; a process without
# tiermem refused a tiermem handle; TIERMEM_IPC=passthrough and `plain` rules keeping
# memory shareable with any process; exported chunks pinned against migration.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
PEER=$B/tests/preload/ipc_peer
SIM=(SIMCUDA_MEM=128M SIMCUDA_NUMA_NODES=0,1)
# 6 MiB with 4 MiB of HBM: chunks in HBM and in CXL
TIERED=(TIERMEM_CXL_NODE=1 TIERMEM_HBM_LIMIT=4M)
TM="LD_PRELOAD=$(preload_value "$LIBTIERMEM")"

# start_exporter DIR VAR=...: the exporter in the background (EXP_PID: its `timeout`), once
# its handle is out
start_exporter() {
  local dir=$1; shift
  mkdir -p "$dir"
  env "$@" timeout 120 "$PEER" export "${EXPORT_SIZE:-6M}" "$dir" >"$dir/exp.out" 2>&1 &
  EXP_PID=$!
  wait_file "$dir/handle"
}
# start_importer DIR MODE VAR=...: an importer in the background (IMP_PID: its `timeout`),
# once it imported
start_importer() {
  local dir=$1 mode=$2; shift 2
  rm -f "$dir/imported"
  env "$@" timeout 120 "$PEER" import "$dir" $mode >"$dir/imp.out" 2>&1 &
  IMP_PID=$!
  wait_file "$dir/imported" "$IMP_PID"
}
# wait_file PATH [PID]: until PATH exists (or PID exited), 60 s at most
wait_file() {
  for _ in $(seq 600); do
    [ -e "$1" ] && return 0
    [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
    sleep 0.1
  done
  return 1
}
socket_listed() { grep -q "@tiermem-ipc\.$1\$" /proc/net/unix; }
line() { grep -m1 "^$1" "$2" | sed "s/^$1 *//"; }
# same_count "before N after M": N == M
same_count() { [ -n "$1" ] && [ "${1%% after*}" == "before ${1##* after }" ]; }
# peer_pid SIDE FILE: the pid the peer printed (not its `timeout`'s)
peer_pid() { sed -n "s/^$1: pid \([0-9]*\).*/\1/p" "$2"; }

# ---- both sides under tiermem: the bytes go both ways
d=$SCRATCH/pair
start_exporter "$d" "${SIM[@]}" "${TIERED[@]}" "$TM"
pid=$(peer_pid exporter "$d/exp.out")
check_eq "the exporter's handle is tiermem's, for memory that says it can be shared" \
  "$(line "exporter: pid $pid" "$d/exp.out")" "capable 1 handle TIERMEM"
check "its socket is in the abstract namespace" socket_listed "$pid"
start_importer "$d" "" "${SIM[@]}" "${TIERED[@]}" "$TM"; touch "$d/close"; wait "$IMP_PID"; imp_rc=$?
touch "$d/finish"; wait "$EXP_PID"; exp_rc=$?
check_eq "the importer opens it" "$(line "importer: open" "$d/imp.out")" CUDA_SUCCESS
check_eq "the imported memory hands out no physical handle of tiermem's" "$(line "importer: retain" "$d/imp.out")" \
  CUDA_ERROR_INVALID_VALUE
check_eq "cuGetProcAddress hands out tiermem's open for CUDA 10.0 and 12.0" \
  "$(line "importer: resolver gives the exported functions:" "$d/imp.out")" yes
check_eq "a second open (through it) shares the first mapping" "$(line "importer: second open" "$d/imp.out")" \
  "shares the mapping"
check_eq "the importer reads the exporter's bytes, all 6 MiB" "$(line "importer: exporter's bytes" "$d/imp.out")" \
  "ok (6291456)"
check_eq "the exporter reads the importer's" "$(line "exporter: importer's bytes" "$d/exp.out")" ok
check_eq "two closes for two opens, a third is an error" "$(line "importer: close" "$d/imp.out")" \
  "CUDA_SUCCESS CUDA_SUCCESS then CUDA_ERROR_INVALID_VALUE"
check_eq "both exit 0" "$imp_rc $exp_rc" "0 0"
fds=$(line "exporter: descriptors" "$d/exp.out")
check "the exporter has no descriptor more after serving ($fds)" same_count "$fds"
fds=$(line "importer: descriptors" "$d/imp.out")
check "the importer has no descriptor more after closing ($fds)" same_count "$fds"
check_eq "chunks moved before the export" "$(line "exporter: migrate before export" "$d/exp.out")" CUDA_SUCCESS
check_eq "an exported allocation's chunks do not move" "$(line "exporter: migrate after export" "$d/exp.out")" \
  CUDA_ERROR_NOT_SUPPORTED
check "the socket is gone with the exporter" eval "! socket_listed $pid"

# ---- 130 chunks: three messages of descriptors, never more than one message's open at once
d=$SCRATCH/large
EXPORT_SIZE=260M start_exporter "$d" "${SIM[@]}" "${TIERED[@]}" "$TM"
start_importer "$d" "" "${SIM[@]}" "${TIERED[@]}" "$TM"; touch "$d/close"; wait "$IMP_PID"; imp_rc=$?
touch "$d/finish"; wait "$EXP_PID"; exp_rc=$?
seen="$(line "importer: exporter's bytes" "$d/imp.out") $(line "exporter: importer's bytes" "$d/exp.out")"
check_eq "260 MiB in 130 chunks are shared both ways" "$imp_rc $exp_rc $seen" "0 0 ok (272629760) ok"

# ---- the importer killed: the exporter serves the next one, leaks nothing
d=$SCRATCH/importer-killed
start_exporter "$d" "${SIM[@]}" "${TIERED[@]}" "$TM"
start_importer "$d" "" "${SIM[@]}" "${TIERED[@]}" "$TM"
kill -KILL "$(peer_pid importer "$d/imp.out")"; wait "$IMP_PID" 2>/dev/null
start_importer "$d" again "${SIM[@]}" "${TIERED[@]}" "$TM"; touch "$d/close"; wait "$IMP_PID"; imp_rc=$?
touch "$d/finish"; wait "$EXP_PID"; exp_rc=$?
check_eq "after an importer was killed, the next one opens the handle and sees its bytes" \
  "$imp_rc $(line "importer: exporter's bytes" "$d/imp.out")" "0 ok (6291456)"
fds=$(line "exporter: descriptors" "$d/exp.out")
check "the exporter kept no descriptor of the killed importer ($fds)" same_count "$fds"
check_eq "the exporter exits 0" "$exp_rc" 0

# ---- the exporter killed: the importer keeps its memory, closes it, cannot reopen
d=$SCRATCH/exporter-killed
start_exporter "$d" "${SIM[@]}" "${TIERED[@]}" "$TM"
pid=$(peer_pid exporter "$d/exp.out")
start_importer "$d" "" "${SIM[@]}" "${TIERED[@]}" "$TM"
kill -KILL "$pid"; wait "$EXP_PID" 2>/dev/null
check "the exporter's socket went with it" eval "! socket_listed $pid"
touch "$d/close"; wait "$IMP_PID"; imp_rc=$?
check_eq "the importer's bytes survive the exporter" "$(line "importer: bytes at close" "$d/imp.out")" ok
check_eq "its closes work, one too many is an error, not a crash" "$imp_rc $(line "importer: close" "$d/imp.out")" \
  "0 CUDA_SUCCESS CUDA_SUCCESS then CUDA_ERROR_INVALID_VALUE"
check_eq "the handle of a dead exporter is refused" "$(line "importer: reopen" "$d/imp.out")" CUDA_ERROR_INVALID_VALUE
check "with a line that says why" \
  grep -q "tiermem: warning: ipc: cuIpcOpenMemHandle: process [0-9]*, which made the handle, has exited" "$d/imp.out"
fds=$(line "importer: descriptors" "$d/imp.out")
check "the importer has no descriptor more ($fds)" same_count "$fds"

# ---- a forged handle, and a process without tiermem
d=$SCRATCH/forged
start_exporter "$d" "${SIM[@]}" "${TIERED[@]}" "$TM"
env "${SIM[@]}" "${TIERED[@]}" "$TM" timeout 60 "$PEER" import "$d" forge >"$d/forged.out" 2>&1
check_eq "a forged handle is refused" "$(line "importer: open" "$d/forged.out")" CUDA_ERROR_INVALID_VALUE
check "with a line that says why" grep -q "ipc: cuIpcOpenMemHandle: process [0-9]* made no such handle" "$d/forged.out"
env "${SIM[@]}" "${TIERED[@]}" "$TM" timeout 60 "$PEER" import "$d" huge >"$d/huge.out" 2>&1
check_eq "a handle whose size field says 2^62 is refused" "$(line "importer: open" "$d/huge.out")" CUDA_ERROR_INVALID_VALUE
check "  with a line naming both sizes" \
  grep -q "ipc: cuIpcOpenMemHandle: the handle says 4611686018427387904 bytes, but process [0-9]* exported [0-9]*: refused" "$d/huge.out"
env "${SIM[@]}" timeout 60 "$PEER" import "$d" >"$d/plain.out" 2>&1
check_eq "a process without tiermem cannot open a tiermem handle" "$(line "importer: open" "$d/plain.out")" \
  CUDA_ERROR_INVALID_VALUE
check "the driver's line shows whose handle it was" grep -q 'the handle starts "TIERMEM' "$d/plain.out"
touch "$d/imported" "$d/finish"; wait "$EXP_PID"

# ---- memory kept plain: any process can open it
for how in TIERMEM_IPC=passthrough "TIERMEM_RULES=size>=4M=plain"; do
  d=$SCRATCH/plain-${how%%=*}
  start_exporter "$d" "${SIM[@]}" TIERMEM_CXL_NODE=1 "$how" "$TM"
  check_eq "$how: the handle is the driver's" "$(sed -n 's/^exporter: pid [0-9]* //p' "$d/exp.out")" \
    "capable 1 handle SIMCUDA"
  start_importer "$d" "" "${SIM[@]}"; touch "$d/close"; wait "$IMP_PID"; imp_rc=$?
  touch "$d/finish"; wait "$EXP_PID"; exp_rc=$?
  seen="$(line "importer: exporter's bytes" "$d/imp.out") $(line "exporter: importer's bytes" "$d/exp.out")"
  check_eq "$how: a process without tiermem shares it both ways" "$imp_rc $exp_rc $seen" "0 0 ok (6291456) ok"
done
# ---- a device that cannot export: chunked memory says so, and its handle is refused
d=$SCRATCH/no-fd
mkdir -p "$d"
out=$(under_tiermem "${SIM[@]}" "${TIERED[@]}" SIMCUDA_POSIX_FD=0 -- "$PEER" export 6M "$d" 2>&1); rc=$?
refused=$(grep -c 'cuIpcGetMemHandle(&handle, ptr) failed: CUDA_ERROR_NOT_SUPPORTED' <<<"$out")
check_eq "without exportable chunks, chunked memory is not IPC capable and its handle is refused" \
  "$rc $(line "exporter: capable" - <<<"$out") $refused" "3 0 1"
check "with a line that says why and what to do" \
  grep -q 'ipc: the device cannot export memory as file descriptors.*TIERMEM_IPC=passthrough' <<<"$out"

out=$(under_tiermem "${SIM[@]}" TIERMEM_IPC=bogus -- "$PEER" export 6M "$SCRATCH/bogus" 2>&1)
check "a bad TIERMEM_IPC is named with what it accepts" grep -q "TIERMEM_IPC.*tiermem or passthrough" <<<"$out"
out=$(under_tiermem "${SIM[@]}" "TIERMEM_RULES=name=blk.*=plain" -- "$PEER" export 6M "$SCRATCH/bad" 2>&1)
check "a plain rule on names is refused (names come after allocation)" grep -q "TIERMEM_RULES" <<<"$out"

done_testing
