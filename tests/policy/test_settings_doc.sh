#!/usr/bin/env bash
# The TIERMEM_* tables of docs/configuration.md and libtiermem(7) are what make docs writes
# from the code: every variable policy/config.c parses is documented once, both pages hold
# the generated text, and a page edited by hand, or a variable added without words, is caught.
source "$(dirname "$0")/../lib/tap.sh"
cd "$TM_ROOT"
generator=$TM_ROOT/$O/tools/tiermem-config-doc
export CONFIG_DOC=$generator

check "the generator was built" test -x "$generator"
check "every variable policy/config.c parses has words in policy/doc/settings_doc.c, once" "$generator" check
check "docs/configuration.md and man/libtiermem.7 are what make docs writes" tools/config-doc/update.sh --check

# names NAME... as one sorted line
names() { grep -oE 'TIERMEM_[A-Z_]+' | sort | tr '\n' ' '; }
parsed=$(grep -oE '^    \{ "TIERMEM_[A-Z_]+"' policy/config.c | names)
check_eq "docs/configuration.md lists each of the $(wc -w <<<"$parsed") parsed variables once" \
  "$(grep -oE '^\| `TIERMEM_[A-Z_]+' docs/configuration.md | names)" "$parsed"
check_eq "libtiermem(7)'s ENVIRONMENT lists each of them once" \
  "$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' man/libtiermem.7 | grep -oE '^\.B TIERMEM_[A-Z_]+' | names)" "$parsed"

# A hand edit inside the generated part of a copy is found, and make docs puts it right.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs" "$work/man"
cp docs/configuration.md "$work/docs/"
cp man/libtiermem.7 "$work/man/"
sed -i 's/^| `TIERMEM_POLICY` | /| `TIERMEM_POLICY` | edited by hand: /' "$work/docs/configuration.md"
DOCS_ROOT=$work tools/config-doc/update.sh --check >"$work/out" 2>&1
check_eq "--check fails on a page edited by hand" "$?" "1"
check "and names the page" grep -q '^docs/configuration.md is not what make docs writes' "$work/out"
DOCS_ROOT=$work tools/config-doc/update.sh >/dev/null
check "make docs restores it" cmp -s docs/configuration.md "$work/docs/configuration.md"
sed -i '/^\.\\" END settings$/d' "$work/man/libtiermem.7"
DOCS_ROOT=$work tools/config-doc/update.sh --check >"$work/out" 2>&1
check_eq "a page without its end marker is an error" "$?" "1"
check "that names the missing markers" grep -q 'markers missing in man/libtiermem.7' "$work/out"
done_testing
