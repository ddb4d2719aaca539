"""A stand-in for scripts/rapidocr_read.py, so the PP-OCRv4 column of the side-by-side scripts
runs in the tests without its venv (rapidocr is a comparison tool, not a dependency).

It prints what rapidocr_read.py prints (a first line with the version and start-up, then one JSON
object per image, here in reverse order: the caller must put them back in its own order). A line
image reads as the text of the file beside it (``IMAGE.txt``), every page as the rows given.
Used by test_compare_tesseract.py and test_compare_chinese.py.
"""
import json
import sys

STARTUP, SECONDS = 1.5, 0.25  # what the fake reports: its start-up, and each image's seconds

RUNNER = r'''
import json, sys
args = sys.argv[1:]
mode, listing = args[args.index("--mode") + 1], args[args.index("--list") + 1]
if %(fail)r:
    sys.stderr.write("Traceback (most recent call last):\n  ...\n%(fail)s\n")
    sys.exit(1)
with open(listing, encoding="utf-8") as handle:
    paths = [line.rstrip("\n") for line in handle if line.strip()]
print(json.dumps({"version": "fake", "startup": %(startup)r}))
for path in reversed(paths):
    if mode == "line":
        with open(path + ".txt", encoding="utf-8") as handle:
            record = {"text": handle.read()}
    else:
        record = {"rows": json.loads(%(rows)r)}
    record.update(path=path, seconds=%(seconds)r)
    print(json.dumps(record, ensure_ascii=False))
'''


def use_fake_runner(reader, folder, rows=(), fail=""):
    """Point ``reader`` (a ``pp_ocr.PaddleOcr``) at a fake runner written into ``folder``:
    every page reads as ``rows`` (lists of pieces); with ``fail``, the runner dies printing it
    as the last line of a traceback."""
    script = folder / "fake_rapidocr_read.py"
    script.write_text(RUNNER % dict(fail=fail, startup=STARTUP, seconds=SECONDS,
                                    rows=json.dumps([list(row) for row in rows])),
                      encoding="utf-8")
    reader.command = [sys.executable, str(script)]
    return reader


def line_images(folder, texts):
    """Files standing for line images (their content does not matter to the fake), each with
    the text the fake reads in it; their paths."""
    paths = []
    for index, text in enumerate(texts):
        path = folder / ("line%d.png" % index)
        path.write_bytes(b"")
        (folder / ("line%d.png.txt" % index)).write_text(text, encoding="utf-8")
        paths.append(str(path))
    return paths
