#!/usr/bin/env bash
# Type families from npm's @fontsource packages (the pinned list in scripts/fontsource_fonts.txt):
# the Latin regular, bold and italic faces of each as .woff files, which FreeType (Pillow) reads.
# Root installs into /usr/local/share/fonts/fontsource, anyone else into ~/.local/share/fonts/fontsource;
# both are folders crnn-generate searches. Packages already installed at their pinned version are skipped.
# Usage: scripts/install_fontsource.sh [DEST]
set -euo pipefail
list="$(dirname "$0")/fontsource_fonts.txt"
if [ "$(id -u)" = 0 ]; then default_dest=/usr/local/share/fonts/fontsource
else default_dest="$HOME/.local/share/fonts/fontsource"; fi
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
  echo "fontsource families: all $total present in $dest"
  exit 0
fi
echo "fontsource families: fetching ${#wanted[@]} of $total packages into $dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "${wanted[@]}" >/dev/null) || {
  echo "error: npm pack failed for the @fontsource packages; is the npm registry reachable?" >&2; exit 2; }
for spec in "${wanted[@]}"; do
  name="${spec%@*}"; name="${name#@fontsource/}"; version="${spec##*@}"
  tarball="$work/fontsource-$name-$version.tgz"
  mkdir -p "$work/$name" "$dest/$name"
  tar -xzf "$tarball" -C "$work/$name" --wildcards 'package/files/*-latin-*.woff'
  faces=$(ls "$work/$name/package/files" | grep -E -e '-latin-(400|700)-(normal|italic)\.woff$' || true)
  # A family without a regular weight (display faces) keeps its one normal weight nearest 400.
  [ -n "$faces" ] || faces=$(ls "$work/$name/package/files" | grep -E -e '-latin-[0-9]+-normal\.woff$' | head -1)
  for face in $faces; do cp "$work/$name/package/files/$face" "$dest/$name/"; done
  touch "$dest/$name/.version-$version"
done
echo "fontsource families: $(find "$dest" -name '*.woff' | wc -l) faces in $dest"
