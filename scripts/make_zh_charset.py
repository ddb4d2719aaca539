"""Write the Simplified Chinese charset (crnn_multigpu/datasets/languages/zh_charset.txt).

Printable ASCII (95, space first), the punctuation and signs of Chinese text that NFKC does not
fold to ASCII, the full-width forms Chinese text keeps (，：；？！（）), and GB2312's 6,763 Hanzi
in code order (Python's gb2312 codec enumerates them: rows 0xB0-0xF7, cells 0xA1-0xFE).

    python scripts/make_zh_charset.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "crnn_multigpu", "datasets", "languages", "zh_charset.txt")
# Chinese punctuation and signs common in running text and technical documents, those that
# the Chinese faces of Debian (WenQuanYi, Smiley Sans, Noto CJK, LXGW, Fandol) all draw.
PUNCTUATION = (u"\u3001\u3002\u300a\u300b\u3008\u3009\u300c\u300d\u300e\u300f\u3010\u3011"
               u"\u3014\u3015\u3016\u3017\u201c\u201d\u2018\u2019\u2014\u2026\u00b7"
               u"\uff0c\uff1a\uff1b\uff1f\uff01\uff08\uff09\uff5e\uffe5\u00d7\u00f7\u00b1\u00b0"
               u"\u2192\u2190\u2260\u00a7\u2116")


def gb2312_hanzi():
    """The 6,763 Hanzi of GB2312 in code order."""
    chars = []
    for row in range(0xB0, 0xF8):
        for cell in range(0xA1, 0xFF):
            try:
                chars.append(bytes([row, cell]).decode("gb2312"))
            except UnicodeDecodeError:
                pass  # the five unassigned cells at the end of row 0xD7
    return chars


def main():
    chars = [chr(code) for code in range(32, 127)] + list(PUNCTUATION) + gb2312_hanzi()
    assert len(set(chars)) == len(chars)
    with open(OUT, "w", encoding="utf-8", newline="\n") as handle:
        handle.write("".join(char + "\n" for char in chars))
    print("%d characters (%d Hanzi) -> %s" % (len(chars), len(gb2312_hanzi()), OUT))


if __name__ == "__main__":
    main()
