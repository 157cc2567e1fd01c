#!/usr/bin/env bash
# The build needs exactly the glibc it states (TIERMEM_MIN_GLIBC in preload/module.mk, and
# docs/libtiermem.md): the newest GLIBC_x.y among the symbol versions libtiermem.so imports.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

stated=$(sed -n 's/^TIERMEM_MIN_GLIBC := //p' "$TM_ROOT/preload/module.mk")
check "preload/module.mk states a minimum glibc" grep -qE '^2\.[0-9]+$' <<<"$stated"
needed=$(readelf -W --dyn-syms "$LIBTIERMEM" | awk '$7 == "UND" { print $8 }' |
  grep -oE '@GLIBC_[0-9.]+' | sed 's/@GLIBC_//' | sort -uV | tail -n 1)
check_eq "libtiermem.so needs glibc $stated, as stated (else change TIERMEM_MIN_GLIBC and docs/libtiermem.md)" \
  "$needed" "$stated"
check "docs/libtiermem.md states it" grep -q "glibc $stated or newer" "$TM_ROOT/docs/libtiermem.md"
done_testing
