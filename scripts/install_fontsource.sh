#!/usr/bin/env bash
# Type families from npm's @fontsource packages, one package@version a line in a pinned list.
#   (default)  scripts/fontsource_fonts.txt: the Latin regular, bold and italic faces of each as
#              .woff files, which FreeType (Pillow) reads. Root installs into
#              /usr/local/share/fonts/fontsource, anyone else into ~/.local/share/fonts/fontsource;
#              both are folders crnn-generate searches.
#   --chinese  scripts/fontsource_zh_fonts.txt: each package splits its face into about 90 .woff
#              slices by Unicode range; scripts/join_font_slices.py joins them into one .ttf
#              (fontTools, in a throwaway virtual environment). Root installs into
#              /usr/local/share/crnn-multigpu/fonts-zh, anyone else into
#              ~/.local/share/crnn-multigpu/fonts-zh: folders only the Chinese description
#              (crnn_multigpu/datasets/languages/zh.json) searches, so English never trains on them.
# Packages already installed at their pinned version are skipped.
# Usage: scripts/install_fontsource.sh [--chinese] [DEST]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
chinese=
if [ "${1:-}" = --chinese ]; then chinese=1; shift; fi
if [ -n "$chinese" ]; then
  list="$here/fontsource_zh_fonts.txt"; what="Chinese fontsource families"
  root_dest=/usr/local/share/crnn-multigpu/fonts-zh; user_dest="$HOME/.local/share/crnn-multigpu/fonts-zh"
else
  list="$here/fontsource_fonts.txt"; what="fontsource families"
  root_dest=/usr/local/share/fonts/fontsource; user_dest="$HOME/.local/share/fonts/fontsource"
fi
if [ "$(id -u)" = 0 ]; then default_dest=$root_dest; else default_dest=$user_dest; fi
dest="${1:-$default_dest}"
if ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null
  else
    echo "error: npm not found; install it (Debian/Ubuntu: apt-get install npm) to get the @fontsource families" >&2
    exit 2
  fi
fi
mkdir -p "$dest"
wanted=()
while read -r spec; do
  case "$spec" in ''|'#'*) continue ;; esac
  name="${spec%@*}"; name="${name#@fontsource/}"
  [ -f "$dest/$name/.version-${spec##*@}" ] || wanted+=("$spec")
done < "$list"
total=$(grep -c '^@' "$list")
if [ "${#wanted[@]}" = 0 ]; then
  echo "$what: all $total present in $dest"
  exit 0
fi
echo "$what: fetching ${#wanted[@]} of $total packages into $dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$chinese" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "fonttools==4.68.0" || {
    echo "error: pip could not install fonttools, which joins the font slices; is PyPI reachable?" >&2; exit 2; }
fi
(cd "$work" && npm pack --silent "${wanted[@]}" >/dev/null) || {
  echo "error: npm pack failed for the @fontsource packages; is the npm registry reachable?" >&2; exit 2; }
for spec in "${wanted[@]}"; do
  name="${spec%@*}"; name="${name#@fontsource/}"; version="${spec##*@}"
  tarball="$work/fontsource-$name-$version.tgz"
  mkdir -p "$work/$name" "$dest/$name"
  if [ -n "$chinese" ]; then
    tar -xzf "$tarball" -C "$work/$name" --wildcards "package/files/$name-*-400-normal.woff"
    "$work/venv/bin/python" "$here/join_font_slices.py" "$dest/$name/$name-400-normal.ttf" \
      "$work/$name"/package/files/*.woff
  else
    tar -xzf "$tarball" -C "$work/$name" --wildcards 'package/files/*-latin-*.woff'
    faces=$(ls "$work/$name/package/files" | grep -E -e '-latin-(400|700)-(normal|italic)\.woff$' || true)
    # A family without a regular weight (display faces) keeps its one normal weight nearest 400.
    [ -n "$faces" ] || faces=$(ls "$work/$name/package/files" | grep -E -e '-latin-[0-9]+-normal\.woff$' | head -1)
    for face in $faces; do cp "$work/$name/package/files/$face" "$dest/$name/"; done
  fi
  touch "$dest/$name/.version-$version"
done
echo "$what: $(find "$dest" -name '*.woff' -o -name '*.ttf' | wc -l) faces in $dest"
