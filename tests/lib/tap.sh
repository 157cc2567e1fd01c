# TAP helpers for shell tests; source this file. Every check prints one "ok"/"not ok" line.
#   check "what is being shown" command args...   passes when the command exits 0
#   check_eq "name" "$actual" "$expected"
#   skip "name" "why it cannot run here"
#   done_testing                                  prints the plan; exits non-zero on failure
#   require_models FILE...                        the test needs these files of $TM_SHARED/models:
#                                                 without them it is one skip naming them, and ends
# Paths: $TM_ROOT (repository), $O (build dir, relative to TM_ROOT), $TM_SHARED (../shared).
set -u
TM_ROOT=${TM_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TM_SHARED=${TM_SHARED:-$TM_ROOT/../shared}
O=${O:-build}
case $O in /*) B=$O ;; *) B=$TM_ROOT/$O ;; esac
_tap_n=0 _tap_failed=0

check() {
  local name=$1; shift
  _tap_n=$((_tap_n + 1))
  if "$@"; then echo "ok $_tap_n - $name"
  else echo "not ok $_tap_n - $name"; _tap_failed=$((_tap_failed + 1)); fi
}
check_eq() {
  _tap_n=$((_tap_n + 1))
  if [ "$2" == "$3" ]; then echo "ok $_tap_n - $1"
  else echo "not ok $_tap_n - $1"; echo "#   got:      $2"; echo "#   expected: $3"
       _tap_failed=$((_tap_failed + 1)); fi
}
skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $1 # SKIP $2"; }
done_testing() { echo "1..$_tap_n"; [ "$_tap_failed" -eq 0 ]; }

# LD_PRELOAD value for an instrumented library: under SAN=1 the ASan runtime must come first.
preload_value() { echo "${TM_SAN_PRELOAD:+$TM_SAN_PRELOAD:}$1"; }

# The test data (stories260K and the llama.cpp vocabularies, tests/models.sha256) lives in
# $TM_SHARED/models, outside the repository: a test that needs a file of it and does not
# find it says so in one skip line, naming the file and where it looked, and stops there.
require_models() {
  local missing=() f
  for f in "$@"; do [ -r "$TM_SHARED/models/$f" ] || missing+=("$f"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  skip "$(basename "$0" .sh)" "test model ${missing[*]} not found in $TM_SHARED/models (set TM_SHARED; docs/install.md: Test data)"
  done_testing
  exit
}
