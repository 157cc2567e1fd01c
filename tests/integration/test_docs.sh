#!/usr/bin/env bash
# The front page and docs/: README.md stays a front page (at most 300 lines), and every
# relative link in it and in docs/*.md names a file of the repository and, after '#', a
# heading (or <a id>) that file has.
source "$(dirname "$0")/../lib/tap.sh"
cd "$TM_ROOT"

check "README.md is a front page of at most 300 lines ($(wc -l <README.md))" test "$(wc -l <README.md)" -le 300
check "LICENSE is there" test -s LICENSE

# anchors FILE: the anchors GitHub makes for its headings (outside code fences), and its <a id>s.
anchors() {
  awk '/^```/ { fence = !fence; next }
       !fence && /^#+ / { h = tolower($0); sub(/^#+ +/, "", h); gsub(/[^a-z0-9_ -]/, "", h); gsub(/ /, "-", h); print h }
       { s = $0; while (match(s, /<a id="[^"]+">/)) { print substr(s, RSTART + 7, RLENGTH - 9); s = substr(s, RSTART + RLENGTH) } }' "$1"
}

# links FILE: the targets of its Markdown links outside code fences, one a line.
links() {
  awk '/^```/ { fence = !fence; next }
       !fence { s = $0; while (match(s, /\]\([^) ]+\)/)) { print substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH) } }' "$1"
}

for page in README.md docs/*.md; do
  [ -f "$page" ] || continue
  bad=()
  while IFS= read -r target; do
    case $target in http://*|https://*|mailto:*) continue ;; esac
    file=${target%%#*} anchor=""
    [[ $target == *"#"* ]] && anchor=${target#*#}
    if [ -z "$file" ]; then file=$page; else file=$(dirname "$page")/$file; fi
    if [ ! -e "$file" ]; then bad+=("$target (no such file)"); continue; fi
    if [ -n "$anchor" ] && ! anchors "$file" | grep -qxF "$anchor"; then bad+=("$target (no such heading)"); fi
  done < <(links "$page")
  check_eq "every link of $page leads somewhere" "${bad[*]:-}" ""
done
done_testing
