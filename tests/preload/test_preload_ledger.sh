#!/usr/bin/env bash
# The shared ledger: processes of one group (TIERMEM_GROUP) racing for one lower tier never
# hold more than its limit in sum, and each says which other process holds part of its
# budget; a SIGKILLed process's share is reclaimed by the next placement; tiermem-stat
# --ledger shows it. Without TIERMEM_GROUP a server shares its budget with the children it
# starts and with no one else. A ledger path that is a symlink or a foreign file is left
# alone, in one line, and each process keeps its own limits.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
MIB=$((1 << 20))
LEDGER=$SCRATCH/ledger
# Each process: 14 MiB of HBM (16 MiB less the 2 MiB reserve), the other 50 MiB of its
# 64 MiB in DDR, whose limit, 120 MiB, holds two such processes but not three.
ALONE=(SIMCUDA_MEM=64M TIERMEM_HBM_LIMIT=16M TIERMEM_TIER_ORDER=hbm,ddr TIERMEM_DDR_LIMIT=120M
       TIERMEM_LEDGER=$LEDGER)
ENVS=("${ALONE[@]}" TIERMEM_GROUP="$(id -gn)")

pids=() outs=()
start() { # start N: a probe holding one allocation of 64 MiB until $SCRATCH/go.N appears
  rm -f "$SCRATCH/go.$1"
  env "${ENVS[@]}" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "$PROBE" pieces 64M 64M "$SCRATCH/go.$1" \
    >"$SCRATCH/out.$1" 2>&1 &
  pids[$1]=$! outs[$1]=$SCRATCH/out.$1
}
settled() { # settled N: the probe holds its memory ("ready") or has exited
  for _ in $(seq 600); do
    grep -q '^ready' "${outs[$1]}" 2>/dev/null && return 0
    kill -0 "${pids[$1]}" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}
holding() { grep -q '^ready' "${outs[$1]}" 2>/dev/null && kill -0 "${pids[$1]}" 2>/dev/null; }
ddr_used() { json_tier "$("$TIERMEM_STAT" --json "${pids[$1]}" 2>/dev/null)" ddr used; }

# ---------------------------------------------------------------- four race for room for two
for i in 1 2 3 4; do start "$i"; done
for i in 1 2 3 4; do settled "$i"; done
held=0 sum=0 failed=0
for i in 1 2 3 4; do
  if holding "$i"; then held=$((held + 1)); sum=$((sum + $(ddr_used "$i"))); fi
  grep -q '^allocation .* failed: CUDA_ERROR_OUT_OF_MEMORY' "${outs[$i]}" && failed=$((failed + 1))
done
check "four processes racing: the DDR they hold together stays within the 120 MiB limit ($((sum / MIB)) MiB)" \
  test "$sum" -le $((120 * MIB))
# one allocation each is placed and charged in one step: which two win is a race, how many is not
check_eq "two hold their 64 MiB, the other two get CUDA_ERROR_OUT_OF_MEMORY" "$held $failed" "2 2"
ledger=$("$TIERMEM_STAT" --ledger "$LEDGER" 2>&1)
check "tiermem-stat --ledger: node 0 holds what the two hold, under a 120 MiB limit" \
  grep -qE "^0 +100 MiB +120 MiB$" <<<"$ledger"
check_eq "  each of the two counts against the group's budget" "$(grep -cE '^ +[0-9]+ +live +50 MiB +group$' <<<"$ledger")" 2
named=0
for i in 1 2 3 4; do
  other=$(sed -nE 's/^tiermem: warning: ledger: process ([0-9]+) shares this process.s lower-tier budget on node 0 \(the processes of TIERMEM_GROUP=.*\) and holds part of it .*/\1/p' "${outs[$i]}" | head -1)
  for j in 1 2 3 4; do [ "$j" != "$i" ] && [ "$other" = "${pids[$j]}" ] && named=$((named + 1)); done
done
check "the processes that found part of their budget held say so, naming another of the four ($named)" \
  test "$named" -ge 1

# ---------------------------------------------------------------- a SIGKILLed share comes back
victim=""
for i in 1 2 3 4; do holding "$i" && { victim=$i; break; }; done
kill -9 "${pids[$victim]}"; wait "${pids[$victim]}" 2>/dev/null
ledger=$("$TIERMEM_STAT" --ledger "$LEDGER" 2>&1)
check "tiermem-stat --ledger marks the killed process gone before anyone reclaims it" \
  grep -qE "^ +${pids[$victim]} +gone " <<<"$ledger"
start 5; settled 5
check "a new process gets the killed one's share" holding 5
check_eq "  and holds 50 MiB of DDR" "$(ddr_used 5)" $((50 * MIB))
ledger=$("$TIERMEM_STAT" --ledger "$LEDGER" 2>&1)
check "  the killed process's entry is gone from the ledger" lacks "^ *${pids[$victim]} " "$ledger"
for i in 1 2 3 4 5; do touch "$SCRATCH/go.$i"; done
wait
ledger=$("$TIERMEM_STAT" --ledger "$LEDGER" 2>&1)
check_eq "after every process exits the ledger is empty" "$(head -1 <<<"$ledger")" "ledger $LEDGER: 0 processes"

# ---------------------------------------------------------------- no silent sharing
# DDR 80 MiB: one process's 50 MiB fits, two together do not.
lone=(SIMCUDA_MEM=64M TIERMEM_HBM_LIMIT=16M TIERMEM_TIER_ORDER=hbm,ddr TIERMEM_DDR_LIMIT=80M TIERMEM_LEDGER=$LEDGER)
ENVS=("${lone[@]}"); start 6; settled 6
ENVS=("${lone[@]}"); start 7; settled 7
check_eq "without TIERMEM_GROUP two unrelated processes each have their own 80 MiB budget" \
  "$(holding 6 && echo held) $(holding 7 && echo held) $(ddr_used 6) $(ddr_used 7)" "held held $((50 * MIB)) $((50 * MIB))"
check "  and neither says another holds part of it" lacks "shares this process" "$(cat "${outs[6]}" "${outs[7]}")"
touch "$SCRATCH/go.6" "$SCRATCH/go.7"; wait
out=$(under_tiermem "${lone[@]}" -- "$PROBE" server 64M 2>&1)
server=$(sed -nE 's/.*ledger: process ([0-9]+) shares.*/\1/p' <<<"$out" | head -1)
check_eq "a server's child shares its budget: the child's 64 MiB do not fit beside the server's" \
  "$(grep -c '^allocation 1 of 1 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out") $(grep -c '^child exited 2$' <<<"$out")" "1 1"
check "  and the child says the server holds part of its budget, naming it" \
  grep -qE "^tiermem: warning: ledger: process $server shares this process's lower-tier budget on node 0 \(process $server and the processes it starts\)" <<<"$out"
ENVS=("${ALONE[@]}")

# ---------------------------------------------------------------- paths left alone
ln -s "$SCRATCH/elsewhere" "$SCRATCH/link"
out=$(under_tiermem "${ENVS[@]}" TIERMEM_LEDGER="$SCRATCH/link" -- "$PROBE" pieces 64M 8M 2>&1)
check_eq "a symlinked ledger path: one line, the process runs on its own limits" \
  "$(grep -c "^tiermem: warning: ledger $SCRATCH/link is not used: it is a symbolic link; this process keeps its own lower-tier limits$" <<<"$out") $(grep -c '^allocated' <<<"$out")" "1 1"
check "  the link's target was not created" test ! -e "$SCRATCH/elsewhere"
printf 'not a ledger' >"$SCRATCH/foreign"
out=$(under_tiermem "${ENVS[@]}" TIERMEM_LEDGER="$SCRATCH/foreign" -- "$PROBE" pieces 64M 8M 2>&1)
check_eq "a file that is no ledger: one line, left unchanged" \
  "$(grep -c "ledger $SCRATCH/foreign is not used: it is not a tiermem ledger" <<<"$out") $(cat "$SCRATCH/foreign")" \
  "1 not a ledger"
out=$(under_tiermem "${ENVS[@]}" TIERMEM_GROUP=no-such-group-here -- "$PROBE" pieces 64M 8M 2>&1)
check_eq "TIERMEM_GROUP naming no group: one line, a budget of its own instead" \
  "$(grep -c "^tiermem: warning: TIERMEM_GROUP=no-such-group-here: no such group; this process shares its lower-tier budgets only with the processes it starts$" <<<"$out")" 1
out=$(under_tiermem "${ENVS[@]}" TIERMEM_LEDGER=off -- "$PROBE" pieces 64M 8M 2>&1)
check_eq "TIERMEM_LEDGER=off: no ledger, no word" "$(grep -c ledger <<<"$out") $(grep -c '^allocated' <<<"$out")" "0 1"
done_testing
