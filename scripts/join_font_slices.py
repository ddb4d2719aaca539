"""Join the slices of one web font into one TrueType file that FreeType (Pillow) reads as a face.

npm's Chinese @fontsource packages split each face into about 90 .woff files by Unicode range
(Google Fonts' slices), so that a browser downloads only what a page uses. A renderer needs the
face whole: this script merges the slices' glyphs and character maps with fontTools (run by
scripts/install_fontsource.sh --chinese in a virtual environment of its own; fontTools is no
dependency of the package).

Usage: python scripts/join_font_slices.py OUT.ttf SLICE.woff [SLICE.woff ...]
"""
import argparse
import os
import sys


def join(slices, out):
    """Write the union of ``slices`` (paths of .woff/.ttf slices of one face) to ``out``;
    returns the number of characters it maps."""
    from fontTools.merge import Merger, Options
    # Vertical metrics are not in every slice, and some slices' layout tables are empty, which
    # the merger cannot join: the renderer sets text horizontally with Pillow's basic layout,
    # which reads neither.
    drop = ["vhea", "vmtx", "GSUB", "GPOS", "GDEF"]
    merged = Merger(options=Options(drop_tables=drop)).merge(sorted(slices))
    merged.flavor = None  # plain TrueType, not WOFF
    temporary = out + ".part"
    merged.save(temporary)
    os.replace(temporary, out)
    return len(merged["cmap"].getBestCmap())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the TrueType file to write")
    parser.add_argument("slices", nargs="+", help="the face's slices (.woff)")
    args = parser.parse_args(argv)
    missing = [path for path in args.slices if not os.path.isfile(path)]
    if missing:
        print("error: %s: no such font slice" % missing[0], file=sys.stderr)
        return 2
    count = join(args.slices, args.out)
    print("%s: %d slices, %d characters" % (args.out, len(args.slices), count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
