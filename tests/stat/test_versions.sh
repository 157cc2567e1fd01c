#!/usr/bin/env bash
# Every program the build leaves in bin/ (and bench-kernels) answers --version with its
# name and the release, exits 0, and prints nothing else.
source "$(dirname "$0")/../lib/tap.sh"
release=$(sed -n 's/^TIERMEM_VERSION *:= *//p' "$TM_ROOT/Makefile")
check "the release is stated in the Makefile" test -n "$release"
# programs whose --version another change brings: a skip naming them until it lands
pending=" tiermem-heat "
progs=("$B"/bin/* "$B/tools/bench-kernels/bench-kernels")
check "bin/ holds programs" test "${#progs[@]}" -gt 3
for p in "${progs[@]}"; do
  [ -x "$p" ] || { skip "$(basename "$p") --version" "not built here ($p)"; continue; }
  name=$(basename "$p")
  out=$(env -u LD_LIBRARY_PATH timeout 10 "$p" --version 2>&1); rc=$?
  if [ "$rc" -ne 0 ] && [[ $pending == *" $name "* ]]; then
    skip "$name --version" "$name does not answer --version yet"
    continue
  fi
  check_eq "$name --version: '$name $release', exit 0, without LD_LIBRARY_PATH" "$rc $out" "0 $name $release"
done
done_testing
