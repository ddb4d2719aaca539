"""Write the Latin-script charset (crnn_multigpu/datasets/languages/latin_charset.txt).

Printable ASCII (95, space first, so that the text model's classes keep their ids); the letters
of Latin-1 Supplement and Latin Extended-A (all but the obsolete kra, long s and n-apostrophe);
the letters of Latin Extended-B that living languages write (Romanian comma-below s/t,
Vietnamese horn o/u, the florin sign); the precomposed Vietnamese letters of Latin Extended
Additional (U+1EA0-U+1EF9) and the capital sharp s; then the typographic punctuation and signs of
European print. Letters are precomposed (NFC), so a reading is NFC as it comes.

    python scripts/make_latin_charset.py
"""
import os
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "crnn_multigpu", "datasets", "languages", "latin_charset.txt")
OBSOLETE = u"\u0138\u0149\u017f"  # kra, n preceded by apostrophe, long s
EXTENDED_B = u"\u0218\u0219\u021a\u021b\u01a0\u01a1\u01af\u01b0\u0192"
SIGNS = (u"\u2018\u2019\u201a\u201c\u201d\u201e\u00ab\u00bb\u2039\u203a\u2013\u2014\u2026"
         u"\u2022\u00b7\u20ac\u00a3\u00a5\u00a2\u00a7\u00b6\u00a9\u00ae\u2122\u00b0\u00b1"
         u"\u00d7\u00f7\u00b5\u00bf\u00a1\u00aa\u00ba\u00bd\u00bc\u00be\u00b9\u00b2\u00b3"
         u"\u2020\u2021\u2030\u2032\u2033\u2192\u2190\u2264\u2265\u2260\u2248\u00ac\u2116")


def latin_letters():
    """The letters after ASCII, in code order."""
    letters = [chr(c) for c in range(0xC0, 0x100) if chr(c) not in u"\u00d7\u00f7"]
    letters += [chr(c) for c in range(0x100, 0x180) if chr(c) not in OBSOLETE]
    letters += list(EXTENDED_B)
    letters += [u"\u1e9e"] + [chr(c) for c in range(0x1EA0, 0x1EFA)]
    return letters


def main():
    chars = [chr(code) for code in range(32, 127)] + latin_letters() + list(SIGNS)
    assert len(set(chars)) == len(chars)
    assert all(unicodedata.normalize("NFC", c) == c for c in chars)
    with open(OUT, "w", encoding="utf-8", newline="\n") as handle:
        handle.write("".join(char + "\n" for char in chars))
    print("%d characters (%d letters beyond ASCII, %d signs) -> %s"
          % (len(chars), len(latin_letters()), len(SIGNS), OUT))


if __name__ == "__main__":
    main()
