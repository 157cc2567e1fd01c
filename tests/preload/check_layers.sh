#!/usr/bin/env bash
# check_layers.sh ROOT [OBJ_DIR] — the tree's one-way rules, by #include lines:
#   - a file in a room of preload/ includes headers of its own room and of the rooms above
#     it in preload/rooms.txt only (top-level preload files may include any room; every room
#     may include the public preload/tiermem.h);
#   - among preload/'s units (a .c and its .h as one), no include cycle spans more than
#     MAX_CYCLE units;
#   - engine/ includes nothing of preload/ or policy/; policy/ no CUDA header; simcuda
#     (tools/simcuda/) nothing else of the tree;
#   - with OBJ_DIR (the build's objects): no object of libtiermem.so but the file hooks and
#     the C library shims calls the file functions, dlsym or dlvsym, which the library itself
#     exports (its own calls would reach its hooks: it is linked -Bsymbolic).
# Prints one line per breach and exits 1 when there is any.
set -u
root=${1:?usage: check_layers.sh ROOT [OBJ_DIR]}
objs=${2:-}
MAX_CYCLE=${MAX_CYCLE:-4}
cd "$root" || exit 2
[ -f preload/rooms.txt ] || { echo "preload/rooms.txt: missing (the order of the rooms)"; exit 1; }

# "file<TAB>included" for every quoted include of the given folders.
includes() {
  grep -rnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][^">]+[">]' --include='*.c' --include='*.h' \
    --include='*.def' --include='*.cc' --include='*.cu' "$@" 2>/dev/null |
    sed -E 's/^([^:]+):[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]+)[">]$/\1\t\2/'
}

breaches=$(
  includes preload | awk -F'\t' -v rooms=preload/rooms.txt -v max="$MAX_CYCLE" '
    BEGIN {
      while ((getline line < rooms) > 0) {
        if (line ~ /^#/ || line !~ /[a-z]/) continue
        split(line, w, /[ \t]+/); rank[w[1]] = ++n; name[n] = w[1]
      }
    }
    function room_of(path,   p) { split(path, p, "/"); return p[3] == "" ? "" : p[2] }
    function unit_of(path) { sub(/\.(c|h|def)$/, "", path); return path }
    {
      file = $1; inc = $2
      r = room_of(file)
      if (r != "" && !(r in rank) && !(r in told)) {
        print file ": folder preload/" r "/ is not a room of preload/rooms.txt"; told[r] = 1
      }
      if (inc !~ /^preload\//) next
      u = unit_of(file); v = unit_of(inc)
      if (u != v && !((u, v) in edge)) { edge[u, v] = 1; out[u] = out[u] " " v; units[u]; units[v] }
      ri = room_of(inc)
      if (r == "") next                                  # the top may include anything
      if (ri == "") {
        if (inc != "preload/tiermem.h")
          print file ": includes " inc ", a file at the top of preload/ (only preload/tiermem.h is open to rooms)"
        next
      }
      if ((ri in rank) && (r in rank) && rank[ri] > rank[r])
        print file ": includes " inc ": room " ri " is above room " r " (preload/rooms.txt)"
    }
    # Tarjan: strongly connected components of the unit graph.
    function visit(u,   list, k, i, v, members, count) {
      index_[u] = lowlink[u] = ++counter; stack[++top] = u; on[u] = 1
      k = split(out[u], list, " ")
      for (i = 1; i <= k; i++) {
        v = list[i]
        if (!(v in index_)) { visit(v); if (lowlink[v] < lowlink[u]) lowlink[u] = lowlink[v] }
        else if (on[v] && index_[v] < lowlink[u]) lowlink[u] = index_[v]
      }
      if (lowlink[u] == index_[u]) {
        members = ""; count = 0
        do { v = stack[top--]; on[v] = 0; members = members " " v; count++ } while (v != u)
        if (count > max) print "include cycle of " count " units (at most " max "):" members
      }
    }
    END { for (u in units) if (!(u in index_)) visit(u) }'

  includes engine | awk -F'\t' '$2 ~ /^(preload|policy)\// { print $1 ": the engine includes " $2 }'
  includes policy | awk -F'\t' '$2 ~ /(^|\/)(cuda[A-Za-z_0-9]*|nvml)\.h$/ { print $1 ": policy/ includes the CUDA header " $2 }'
  includes tools/simcuda | awk -F'\t' '$2 ~ /^(preload|policy|engine|kernels)\// { print $1 ": simcuda includes " $2 " (it depends on nothing else in the tree)" }'

  if [ -n "$objs" ]; then
    exported='^(open|open64|openat|openat64|close|read|pread|pread64|readv|preadv|preadv64|mmap|mmap64|munmap|dlsym|dlvsym)$'
    for o in $(find "$objs/preload" "$objs/policy" -name '*.o' 2>/dev/null | sort); do
      case "$o" in */hooks/hook_file.o|*/base/libc_real.o) continue ;; esac
      for s in $(nm -u "$o" 2>/dev/null | awk '{print $2}' | grep -E "$exported"); do
        echo "${o#$objs/}: calls $s directly (use base/libc_real.h: the call would reach the library's own hook)"
      done
    done
  fi
)
if [ -n "$breaches" ]; then
  printf '%s\n' "$breaches"
  exit 1
fi
exit 0
