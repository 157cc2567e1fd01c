#!/usr/bin/env bash
# Asynchronous streams (SIMCUDA_ASYNC=1): the driver conformance program, whose tests of
# pending work skip on a driver that completes work at submission, runs whole: held
# kernels keep their streams busy, events, cuStreamWaitEvent, synchronisation and
# arguments copied at launch behave as on a GPU. Every test must run; none may skip.
source "$(dirname "$0")/../lib/tap.sh"
out=$(SIMCUDA_ASYNC=1 CMOCKA_MESSAGE_OUTPUT=TAP timeout 600 "$B/tests/simcuda_conformance" 2>&1)
rc=$?
check_eq "the conformance program passes with SIMCUDA_ASYNC=1" "$rc" "0"
[ "$rc" = 0 ] || grep -aE '^not ok|ERROR|LINE' <<<"$out" | sed 's/^/#   /'
check_eq "no test skips" "$(grep -acE '^ok [0-9]+.*# SKIP' <<<"$out")" "0"
for t in stream_runs_in_order stream_waits_for_event stream_destroy_with_pending_work \
         context_synchronize_waits_for_all_streams event_pending_work event_synchronize_waits \
         launch_copies_arguments_at_launch; do
  check "$t ran and passed" grep -aqE "^ok [0-9]+ - $t\$" <<<"$out"
done
done_testing
