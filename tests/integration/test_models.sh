#!/usr/bin/env bash
# The test data in $TM_SHARED/models is what tests/models.sha256 says it is: every file
# present has its checksum (a missing file is one skip, named; the tests that need it skip
# themselves the same way).
source "$(dirname "$0")/../lib/tap.sh"
list=$TM_ROOT/tests/models.sha256
while read -r sum file; do
  case $sum in '#'*|'') continue ;; esac
  path=$TM_SHARED/models/$file
  if [ ! -e "$path" ]; then
    skip "$file has its checksum" "not found in $TM_SHARED/models (set TM_SHARED; docs/install.md: Test data)"
    continue
  fi
  check_eq "$file has its checksum" "$(sha256sum < "$path" | cut -d' ' -f1)" "$sum"
done < "$list"
done_testing
