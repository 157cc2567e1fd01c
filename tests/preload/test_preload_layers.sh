#!/usr/bin/env bash
# The tree's one-way rules (tests/preload/check_layers.sh): preload/'s rooms include only
# their own and the rooms above them in preload/rooms.txt, no include cycle spans more than
# four units, the engine includes nothing of preload/ or policy/, policy/ no CUDA header,
# simcuda nothing else of the tree, and the library's own file calls reach the C library.
# Each rule is also shown to fail on a copy of the tree with a breach planted in it.
. "$(dirname "$0")/../lib/tap.sh"
check_layers=$TM_ROOT/tests/preload/check_layers.sh

out=$("$check_layers" "$TM_ROOT" "$B/obj" 2>&1)
rc=$?
check "the tree keeps every one-way rule" test "$rc" -eq 0
[ "$rc" -eq 0 ] || printf '#   %s\n' "$out" | head -40

# A copy of what the check reads, to plant breaches in.
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
plant() { # plant NAME FILE LINE: a fresh copy with LINE appended to FILE; prints the check's output
  rm -rf "$copy/tree"
  mkdir -p "$copy/tree"
  (cd "$TM_ROOT" && cp -r preload policy engine "$copy/tree/" && mkdir -p "$copy/tree/tools" &&
    cp -r tools/simcuda "$copy/tree/tools/")
  printf '%s\n' "$2" >> "$copy/tree/$1"
  "$check_layers" "$copy/tree" 2>&1
}
fails_naming() { # fails_naming WHAT OUTPUT: the check failed and named WHAT
  [ -n "$2" ] && grep -qF -- "$1" <<<"$2"
}

out=$(plant preload/mem/alloc.c '#include "preload/heat/heat.h"')
check "an upward include (mem/alloc.c including heat/heat.h) is refused, naming both rooms" \
  fails_naming "preload/mem/alloc.c: includes preload/heat/heat.h: room heat is above room mem" "$out"
out=$(plant preload/base/log.c '#include "preload/hooks/hook.h"')
check "the bottom room including the top one is refused" \
  fails_naming "preload/base/log.c: includes preload/hooks/hook.h: room hooks is above room base" "$out"
out=$(plant preload/tiers/device.c '#include "preload/lifecycle.h"')
check "a room including a file at preload/'s top is refused" \
  fails_naming "preload/tiers/device.c: includes preload/lifecycle.h, a file at the top of preload/" "$out"
out=$(plant engine/model.c '#include "preload/mem/alloc.h"')
check "the engine including preload/ is refused" fails_naming "engine/model.c: the engine includes preload/mem/alloc.h" "$out"
out=$(plant engine/model.c '#include "policy/place.h"')
check "the engine including policy/ is refused" fails_naming "engine/model.c: the engine includes policy/place.h" "$out"
out=$(plant policy/place.c '#include <cuda.h>')
check "policy/ including cuda.h is refused" fails_naming "policy/place.c: policy/ includes the CUDA header cuda.h" "$out"
out=$(plant tools/simcuda/sim_memory.c '#include "policy/units.h"')
check "simcuda including the rest of the tree is refused" \
  fails_naming "tools/simcuda/sim_memory.c: simcuda includes policy/units.h" "$out"

# A cycle of five units within one room (no include goes upward): backing -> chunk_pool ->
# registry -> vmm_handles -> spill_note -> backing.
cyc_tree() {
  plant preload/mem/backing.h '#include "preload/mem/chunk_pool.h"' >/dev/null
  printf '#include "preload/mem/registry.h"\n' >> "$copy/tree/preload/mem/chunk_pool.h"
  printf '#include "preload/mem/vmm_handles.h"\n' >> "$copy/tree/preload/mem/registry.h"
  printf '#include "preload/mem/spill_note.h"\n' >> "$copy/tree/preload/mem/vmm_handles.h"
  printf '#include "preload/mem/backing.h"\n' >> "$copy/tree/preload/mem/spill_note.h"
  "$check_layers" "$copy/tree" 2>&1
}
out=$(cyc_tree)
check "an include cycle of five units is refused, naming them" \
  fails_naming "include cycle of 5 units (at most 4):" "$out"
check "... every unit of it named" \
  bash -c 'for u in backing chunk_pool registry vmm_handles spill_note; do grep -q "preload/mem/$u" <<<"$1" || exit 1; done' _ "$out"

out=$(MAX_CYCLE=4 "$check_layers" "$TM_ROOT" 2>&1 | grep -c 'include cycle' || true)
check_eq "no include cycle among preload/'s units spans more than four" "$out" "0"

# Files at preload/'s top, and rooms.
top=$(find "$TM_ROOT/preload" -maxdepth 1 -type f | wc -l)
check "at most 10 files stay at preload/'s top ($top)" test "$top" -le 10
rooms=$(find "$TM_ROOT/preload" -mindepth 1 -maxdepth 1 -type d | wc -l)
check "preload/ has at least 4 rooms ($rooms)" test "$rooms" -ge 4
unlisted=$(for d in "$TM_ROOT"/preload/*/; do r=$(basename "$d"); grep -q "^$r " "$TM_ROOT/preload/rooms.txt" || echo "$r"; done)
check_eq "every sub-folder of preload/ is a room of rooms.txt" "$unlisted" ""

# The C library shims: an object that calls open itself is named.
if [ -d "$B/obj/preload" ]; then
  objcopy_dir=$copy/obj
  mkdir -p "$objcopy_dir/preload/mem" "$objcopy_dir/policy"
  printf 'int open(const char *, int, ...);\nint tm_planted(void) { return open("x", 0); }\n' > "$copy/planted.c"
  ${CC:-cc} -c "$copy/planted.c" -o "$objcopy_dir/preload/mem/planted.o"
  out=$("$check_layers" "$TM_ROOT" "$objcopy_dir" 2>&1)
  check "an object of the library calling open itself is refused" \
    fails_naming "preload/mem/planted.o: calls open directly" "$out"
  printf 'void *dlsym(void *, const char *);\nvoid *tm_planted(void *h) { return dlsym(h, "x"); }\n' > "$copy/planted.c"
  ${CC:-cc} -c "$copy/planted.c" -o "$objcopy_dir/preload/mem/planted.o"
  out=$("$check_layers" "$TM_ROOT" "$objcopy_dir" 2>&1)
  check "an object of the library calling dlsym itself is refused" \
    fails_naming "preload/mem/planted.o: calls dlsym directly" "$out"
else
  skip "an object of the library calling open itself is refused" "no objects in $B/obj (build first)"
  skip "an object of the library calling dlsym itself is refused" "no objects in $B/obj (build first)"
fi
done_testing
