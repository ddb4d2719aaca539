#!/usr/bin/env bash
# Debian/Ubuntu packages the OCR tools use: typefaces to train on (about 60 families, none of
# the families reserved for independent evaluation, plus 149 families from npm's @fontsource
# packages, scripts/install_fontsource.sh), a word list, and poppler for the real-document
# check. Root installs them with apt-get; anyone else is told what to install.
# Usage: scripts/install_system_packages.sh [--minimal | --compare | --chinese | --latin | --detector]
#   --minimal: what the tests need (one Chinese face among them: WenQuanYi Micro Hei; qpdf
#              checks the searchable PDFs written; Chromium prints the detector's test pages)
#   --detector: the text detector's page material (scripts/make_page_material.py): Chromium to
#              print HTML documentation (debian-reference in six languages, python3-doc) in the
#              training faces, and TeX Live's documentation PDFs; debian-handbook's HTML for
#              scripts/page_makes.py's browser prints
#   --chinese: what the Chinese text model trains on: Chinese faces (not the reserved AR PL;
#              six @fontsource families among them, install_fontsource.sh --chinese), the texts
#              of debian-reference-zh-cn and texlive-lang-chinese's PDFs (poppler-data lets
#              poppler extract their Chinese)
#   --latin:   what the Latin-script model trains on (languages/_latin.json and its members):
#              the training faces, word lists (Debian w* lists, hunspell dictionaries) and the
#              texts of Debian's translated manuals, manual pages and message catalogues
#   --compare: the side-by-side checks with Tesseract (scripts/compare_tesseract.py,
#              compare_chinese.py, compare_latin.py): Tesseract 5 with its English, Chinese,
#              Latin-script and per-language models, the reserved type families and the reserved
#              PDFs (never trained on: crnn-generate leaves reserved families out; the lshort
#              translations of texlive-lang-* are named by the languages' descriptions), and
#              Debian's reserved manuals in English and Chinese (scripts/page_reserved.py)
set -euo pipefail
MINIMAL="fonts-dejavu-core fonts-dejavu-extra wamerican wamerican-small poppler-utils qpdf
fonts-wqy-microhei chromium"
CHINESE="fonts-noto-cjk fonts-noto-cjk-extra fonts-wqy-zenhei fonts-wqy-microhei fonts-droid-fallback
fonts-lxgw-wenkai fonts-smiley-sans fonts-hanazono fonts-babelstone-han fonts-cns11643-kai
fonts-cns11643-sung texlive-lang-chinese poppler-data debian-reference-zh-cn"
FONTS="fonts-roboto fonts-roboto-slab fonts-open-sans fonts-lato fonts-crosextra-carlito
fonts-crosextra-caladea fonts-ebgaramond fonts-linuxlibertine fonts-sil-gentium fonts-sil-charis
fonts-sil-andika fonts-firacode fonts-hack fonts-cantarell fonts-go fonts-jetbrains-mono fonts-stix
fonts-paratype fonts-comic-neue fonts-inconsolata fonts-dancingscript fonts-kaushanscript
fonts-lobster fonts-cabin fonts-quicksand fonts-comfortaa fonts-dosis fonts-karla fonts-vollkorn
fonts-oldstandard fonts-courier-prime fonts-b612 fonts-anonymous-pro fonts-inter fonts-manrope
fonts-league-spartan fonts-bebas-neue fonts-yanone-kaffeesatz fonts-averia-gwf fonts-quattrocento
fonts-oxygen fonts-sora fonts-play fonts-mononoki fonts-noto-mono fonts-noto-core
fonts-adf-accanthis fonts-adf-baskervald fonts-adf-berenis fonts-adf-gillius fonts-adf-libris
fonts-adf-romande fonts-adf-switzera fonts-adf-universalis fonts-adf-verana fonts-junction
fonts-prociono fonts-cardo fonts-tuffy fonts-clear-sans fonts-arkpandora fonts-lmodern fonts-cmu"
LATIN="wngerman wfrench wspanish witalian wportuguese wbrazilian wpolish wdutch wdanish wswedish
wnorwegian wcatalan hunspell-cs hunspell-sk hunspell-tr hunspell-vi hunspell-hu hunspell-ro
hunspell-sl hunspell-hr hunspell-es hunspell-it hunspell-pt-pt hunspell-pl hunspell-da hunspell-sv
hunspell-no hunspell-ca hunspell-fr hunspell-de-de hunspell-nl myspell-et debian-reference-de
debian-reference-es debian-reference-fr debian-reference-it debian-reference-pt
debian-reference-pt-br manpages-cs manpages-da manpages-de manpages-es manpages-fi manpages-fr
manpages-hu manpages-it manpages-nb manpages-nl manpages-pl manpages-pt-br manpages-ro manpages-sv
manpages-vi manpages-tr"
COMPARE="tesseract-ocr tesseract-ocr-eng fonts-liberation fonts-freefont-ttf fonts-urw-base35
fonts-texgyre libtasn1-doc shared-mime-info python-reportlab-doc tesseract-ocr-chi-sim
fonts-arphic-ukai fonts-arphic-uming fonts-arphic-gbsn00lp fonts-arphic-gkai00mp texlive-lang-chinese
poppler-data manpages-zh tesseract-ocr-script-latn tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-spa
tesseract-ocr-ita tesseract-ocr-por tesseract-ocr-pol tesseract-ocr-ces tesseract-ocr-slk tesseract-ocr-nld
tesseract-ocr-tur tesseract-ocr-fin tesseract-ocr-est tesseract-ocr-slv tesseract-ocr-vie
texlive-lang-german texlive-lang-french texlive-lang-spanish texlive-lang-italian
texlive-lang-portuguese texlive-lang-polish texlive-lang-czechslovak texlive-lang-european
texlive-lang-other debian-faq debian-faq-zh-cn maint-guide maint-guide-zh-cn installation-guide-amd64"
DETECTOR="chromium debian-reference-en debian-reference-de debian-reference-es debian-reference-fr
debian-reference-it debian-reference-pt debian-reference-pt-br python3-doc texlive-latex-base-doc
texlive-pictures-doc debian-handbook"
case "${1:-}" in
  --minimal) packages="$MINIMAL" ;;
  --compare) packages="$MINIMAL $COMPARE" ;;
  --chinese) packages="$MINIMAL $CHINESE" ;;
  --latin) packages="$MINIMAL $FONTS $LATIN" ;;
  --detector) packages="$MINIMAL $FONTS $DETECTOR" ;;
  *) packages="$MINIMAL $FONTS" ;;
esac
missing=$(for p in $packages; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
fontsource() {
  case "${1:-}" in
    ''|--latin|--detector) "$(dirname "$0")/install_fontsource.sh" ;;
    --chinese) "$(dirname "$0")/install_fontsource.sh" --chinese ;;
  esac
}
if [ -z "$missing" ]; then
  echo "system packages: all $(echo $packages | wc -w) present"
  fontsource "${1:-}"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing $(echo $missing | wc -w) Debian packages (fonts, word list, poppler)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null; } || {
    echo "error: apt-get could not install: $missing" >&2; exit 2; }
else
  echo "warning: not root or no apt-get; install these for full results:" >&2
  echo "  sudo apt-get install $missing" >&2
  echo "(or point CRNN_FONT_DIRS at folders of .ttf/.otf fonts; crnn-generate --list-fonts shows what is found)" >&2
fi
fontsource "${1:-}"
