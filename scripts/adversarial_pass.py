"""An adversarial pass over what a new user hands the tools: crnn-predict (crops, --lines,
--page, PDFs, TIFFs, every --format, --engine onnx, the shipped models), crnn-evaluate (label
files as editors write them), crnn-export, crnn-train --resume and the Python API
(``ocr.Reader``), with the files a phone, a scanner, a shell or a file manager hands over.

Every case runs as its own process under a timeout, on fixtures this script makes in a temporary
folder (deterministic: no randomness, fixed fonts), and is judged by what the user sees: its exit
status and its first ``error:``/``skipped:``/``note:``/``warning:`` line (or the output it
prints). The table (markdown) goes to stdout; docs/reliability.md keeps the one of 2026-12-07.

    python scripts/adversarial_pass.py [--python PYTHON] [--only ID,ID] [--timeout S]

Verdicts: right; unclear error (refused, but the line does not say what and what to do);
silently wrong (exit 0, or a wrong reading or output, without a word); hang (no end within the
timeout); traceback.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from xml.dom import minidom

from adversarial_fixtures import LABEL_FILES, fixtures

Result = collections.namedtuple("Result", ["rc", "out", "err", "hung"])
Case = collections.namedtuple("Case", ["id", "what", "run", "judge"])


# ---------------------------------------------------------------- judging

MESSAGE = re.compile(r"^(error|skipped|note|warning): ", re.M)


def seen(result):
    """What the user sees: the exit status and the first message line (else the last line)."""
    if result.hung:
        return "no end within the timeout"
    err = result.err.decode("utf-8", "backslashreplace")
    lines = [l for l in err.splitlines() if MESSAGE.match(l)]
    out = [l for l in result.out.decode("utf-8", "backslashreplace").splitlines() if l.strip()]
    if result.rc == 0 and out:  # what was read (crnn-evaluate: its scores, the last line)
        lines = lines[:1] + ["(stdout) " + (out[-1] if "word_accuracy" in out[-1] else out[0])]
    if not lines:
        lines = [l for l in err.splitlines() if l.strip() and not l.startswith("INFO ")][-1:]
    line = "; ".join(lines[:2]) if lines else "(nothing on stderr)"
    line = _tidy(line)
    return "exit %d: %s" % (result.rc, line[:260] + ("..." if len(line) > 260 else ""))


def refuses(pattern, rc=2):
    """Right when the call ends with ``rc`` and a message matching ``pattern``."""
    def judge(r):
        if r.rc == 0:
            return "silently wrong"
        if r.rc == rc and re.search(pattern, r.err.decode("utf-8", "replace"), re.I | re.M):
            return "right"
        return "unclear error"
    return judge


def skips(pattern, out=None):
    """Right when the bad input gets a ``skipped:`` line matching ``pattern``, exit 1, and the
    output passes ``out`` (a predicate on stdout bytes) when given."""
    def judge(r):
        err = r.err.decode("utf-8", "replace")
        if r.rc == 0:
            return "silently wrong"
        if out is not None and not out(r.out):
            return "silently wrong"
        if r.rc == 1 and re.search(r"^skipped: .*" + pattern, err, re.I | re.M):
            return "right"
        return "unclear error"
    return judge


def reads(*expected, rc=0, err=None):
    """Right when the call ends with ``rc`` and stdout holds each of ``expected`` (bytes)."""
    def judge(r):
        if r.rc == rc and all(e in r.out for e in expected) and (
                err is None or re.search(err, r.err.decode("utf-8", "replace"), re.M)):
            return "right"
        if r.rc in (0, rc):
            return "silently wrong"
        return "unclear error"
    return judge


def close_to(text, words=2):
    """A predicate: stdout holds at least ``words`` of the words of ``text``."""
    def check(out):
        got = out.decode("utf-8", "replace").lower()
        return sum(w.lower() in got for w in text.split()) >= words
    return check


def all_of(*judges):
    """The first verdict that is not right, else right."""
    def judge(r):
        for j in judges:
            verdict = j(r)
            if verdict != "right":
                return verdict
        return "right"
    return judge


def no_raw_warning(r):
    """Wrong when a library's raw warning line (``...py:982: UserWarning: ...``) reached stderr."""
    return "unclear error" if re.search(rb"\.py:\d+: \w*Warning", r.err) else "right"


GOOD_SCORES = {}


def scores(good=False, **expected):
    """Right when crnn-evaluate ends with exit 0 and scores (its JSON line) as ``expected``, or
    as the clean label file scored (``good``: this is the clean one, remembered)."""
    def judge(r):
        try:
            got = json.loads(r.out.decode("utf-8").strip().splitlines()[-1])
        except (ValueError, IndexError):
            return "unclear error" if r.rc else "silently wrong"
        keys = ("n", "word_accuracy", "cer")
        if good:
            GOOD_SCORES.update((k, got[k]) for k in keys)
        want = dict(GOOD_SCORES if not expected else {}, **expected)
        return "right" if r.rc == 0 and all(got.get(k) == v for k, v in want.items()) \
            else "silently wrong"
    return judge


def json_lines_valid(r):
    try:
        for line in r.out.decode("utf-8").splitlines():
            json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return "silently wrong"
    return "right"


def xml_valid(r):
    try:
        minidom.parseString(r.out)
    except Exception:  # noqa: BLE001 - any parse failure is the verdict
        return "silently wrong"
    return "right"


# ---------------------------------------------------------------- cases

def cases(f, python):
    predict = [python, "-m", "crnn_multigpu.cli.predict"]
    evaluate = [python, "-m", "crnn_multigpu.cli.evaluate"]
    export = [python, "-m", "crnn_multigpu.cli.export"]
    train = [python, "-m", "crnn_multigpu.cli.train"]
    out = os.path.join(os.path.dirname(f["hello.png"]), "out")
    hello = close_to("hello world")

    def api(code):
        return [python, "-c", "from crnn_multigpu import ocr\nimport sys\nF = %r\n%s" % (f, code)]

    c = [
        # crops
        Case("crop", "a clean line crop", predict + [f["hello.png"]], reads(b"hello world")),
        Case("exif-line", "phone photo of a line, EXIF orientation 6", predict + [f["exif6.jpg"]],
             reads(b"hello world")),
        Case("cmyk", "CMYK JPEG crop", predict + [f["cmyk.jpg"]], reads(b"hello world")),
        Case("16bit", "16-bit grey PNG crop", predict + [f["sixteen.png"]], reads(b"hello world")),
        Case("palette", "palette PNG crop", predict + [f["palette.png"]], reads(b"hello world")),
        Case("alpha", "RGBA crop, black under the transparency", predict + [f["alpha.png"]],
             reads(b"hello world")),
        Case("1px", "a 1 x 1 image among good crops", predict + [f["onepx.png"], f["hello.png"]],
             reads(b"hello world")),
        Case("1px-wide", "a 1 px wide crop among good crops",
             predict + [f["onewide.png"], f["hello.png"]], reads(b"hello world")),
        Case("bomb", "a PNG declaring 30000 x 30000 pixels", predict + [f["bomb.png"], f["hello.png"]],
             skips(r"pixels.*CRNN_MAX_IMAGE_PIXELS", hello)),
        Case("trunc-png", "a truncated PNG among good crops",
             predict + [f["truncated.png"], f["hello.png"]], skips(r"damaged.*copy", hello)),
        Case("trunc-jpg", "a truncated JPEG among good crops",
             predict + [f["truncated.jpg"], f["hello.png"]], skips(r"damaged.*copy", hello)),
        Case("corrupt-tif", "a corrupt TIFF", predict + [f["corrupt.tif"], f["hello.png"]],
             all_of(skips(r"damaged.*copy", hello), no_raw_warning)),
        Case("empty", "an empty file", predict + [f["empty.png"], f["hello.png"]],
             skips(r"empty", hello)),
        Case("text-png", "a text file named .png", predict + [f["text.png"], f["hello.png"]],
             skips(r"text", hello)),
        Case("pdf-crop", "a PDF given as a crop", predict + [f["doc.pdf"], f["hello.png"]],
             skips(r"--page", hello)),
        Case("folder", "a folder", predict + [f["folder"], f["hello.png"]],
             skips(r"folder", hello)),
        Case("fifo", "a FIFO (nobody writes)", predict + [f["fifo.png"], f["hello.png"]],
             skips(r"pipe", hello)),
        Case("symlink-loop", "a symlink loop", predict + [f["loop_a.png"], f["hello.png"]],
             skips(r"loop.*point it", hello)),
        Case("symlink-dangling", "a symlink to a moved file",
             predict + [f["link.png"], f["hello.png"]], skips(r"symbolic link to .*moved", hello)),
        Case("missing", "a missing file", predict + [f["hello.png"] + ".nope", f["hello.png"]],
             skips(r"no such file", hello)),
        Case("tab-name", "a name with a TAB", predict + [f["tab\tname.png"]],
             reads(b"tab\\tname.png\thello world")),
        Case("newline-name", "a name with a newline", predict + [f["new\nline.png"]],
             reads(b"new\\nline.png\thello world")),
        Case("latin1-name", "a name with a non-UTF-8 byte", predict + [f["bad_utf8"]],
             reads(b"bad\\xe9name.png\thello world")),
        Case("dash-name", "a name with a leading dash", predict + ["--", f["-dash.png"]],
             reads(b"-dash.png\thello world")),
        Case("dash-name-bare", "a name with a leading dash in the folder, no --",
             predict + ["-dash.png"], refuses(r"-dash\.png is a file.*--")),
        Case("json-bad-names", "--format json, bad and hostile names",
             predict + ["--format", "json", f["bad_utf8"], f["tab\tname.png"], f["empty.png"]],
             all_of(json_lines_valid, reads(b'"hello world"', rc=1))),
        Case("with-prob", "--with-prob on a crop", predict + ["--with-prob", f["hello.png"]],
             reads(b"hello world\t-")),
        Case("lines", "--lines on a long line", predict + ["--lines", f["wide_line.png"]],
             reads(b"a very long line a very long line")),
        Case("page-as-crop", "a page read as a crop: a note", predict + [f["page.png"]],
             reads(b"page.png\t", err=r"^note: .*--page")),
        Case("words-wide", "--model words on a long line", predict + ["--model", "words",
                                                                      f["wide_line.png"]],
             reads(b"wide_line.png\t", err=r"^note: .*times as wide.*--lines")),
        Case("zh-crop", "--model zh on a Latin crop", predict + ["--model", "zh", f["hello.png"]],
             reads(b"hello")),
        Case("zh-beam", "--model zh --beam-width 1000", predict + ["--model", "zh", "--beam-width",
                                                                   "1000", f["hello.png"]],
             refuses(r"beam width 1000 is too wide")),
        Case("beam-neg", "--beam-width -3", predict + ["--beam-width", "-3", f["hello.png"]],
             refuses(r"beam")),
        Case("hocr-crops", "--format hocr without --page", predict + ["--format", "hocr",
                                                                      f["hello.png"]],
             refuses(r"--page")),
        # pages
        Case("page", "--page on a page image", predict + ["--page", f["page.png"]],
             reads(b"quick brown fox")),
        Case("exif-page", "--page on a phone photo of a page (EXIF 6)",
             predict + ["--page", f["exif6_page.jpg"]], reads(b"quick brown fox")),
        Case("pdf", "--page on a 2-page PDF", predict + ["--page", f["doc.pdf"]],
             reads(b"quick brown fox", b"liquor jugs")),
        Case("pdf-pages", "--pages 2 of a PDF", predict + ["--page", "--pages", "2", f["doc.pdf"]],
             reads(b"liquor jugs")),
        Case("pages-range", "--pages 3-9 past the end", predict + ["--page", "--pages", "3-9",
                                                                   f["doc.pdf"]],
             skips(r"page|pages")),
        Case("pages-syntax", "--pages 2-x", predict + ["--page", "--pages", "2-x", f["doc.pdf"]],
             refuses(r"--pages")),
        Case("pages-zero", "--pages 0", predict + ["--page", "--pages", "0", f["doc.pdf"]],
             refuses(r"--pages")),
        Case("pages-backwards", "--pages 5-2", predict + ["--page", "--pages", "5-2",
                                                          f["doc.pdf"]],
             refuses(r"--pages")),
        Case("pages-no-doc", "--pages with only images", predict + ["--page", "--pages", "1",
                                                                   f["page.png"]],
             refuses(r"chooses pages of documents.*leave the page selection out")),
        Case("dpi", "--dpi 5", predict + ["--page", "--dpi", "5", f["doc.pdf"]], refuses(r"dpi")),
        Case("tiff", "--page on a 2-page TIFF", predict + ["--page", f["multi.tif"]],
             reads(b"quick brown fox", b"liquor jugs", err=r"multi\.tif#page=2")),
        Case("tiff-pages", "--pages 2 of a TIFF", predict + ["--page", "--pages", "2",
                                                             f["multi.tif"]],
             all_of(reads(b"liquor jugs"), lambda r: "silently wrong" if b"page=1" in r.out
                    else "right")),
        Case("locked-pdf", "a password PDF among pages",
             predict + ["--page", f["locked.pdf"], f["page.png"]],
             skips(r"password", close_to("quick brown fox", 3))),
        Case("trunc-pdf", "a truncated PDF among pages",
             predict + ["--page", f["truncated.pdf"], f["page.png"]],
             skips(r"damaged|cut short", close_to("quick brown fox", 3))),
        Case("pdf-as-png", "a PDF named .png, --page", predict + ["--page", f["pdf_named.png"]],
             reads(b"quick brown fox")),
        Case("flat-page", "--page on a 1200 x 1 image", predict + ["--page", f["flat_page.png"],
                                                                   f["page.png"]],
             skips(r"too small", close_to("quick brown fox", 3))),
        Case("page-words", "--page --model words", predict + ["--page", "--model", "words",
                                                              f["page.png"]],
             refuses(r"reads whole lines")),
        Case("page-zh", "--page --model zh on a Latin page", predict + ["--page", "--model", "zh",
                                                                        f["page.png"]],
             reads(b"quick")),
        Case("hocr-mixed", "--format hocr with a bad input among pages",
             predict + ["--page", "--format", "hocr", f["page.png"], f["truncated.pdf"],
                        f["bad_utf8"]],
             all_of(xml_valid, reads(b"quick", rc=1))),
        Case("json-pages", "--page --format json with a missing input",
             predict + ["--page", "--format", "json", f["page.png"], f["hello.png"] + ".nope"],
             all_of(json_lines_valid, reads(b"quick", rc=1))),
        Case("pdf-out", "--format pdf --out x.pdf, round trip by pdftotext",
             ["sh", "-c", '"$@" && pdftotext %s/x.pdf -' % out, "sh"]
             + predict + ["--page", "--format", "pdf", "--out", out + "/x.pdf", f["page.png"]],
             reads(b"quick brown fox", b"liquor jugs")),
        Case("pdf-no-out", "--format pdf without --out", predict + ["--page", "--format", "pdf",
                                                                    f["page.png"]],
             refuses(r"--out")),
        Case("pdf-existing", "--out onto an existing file", predict + [
            "--page", "--format", "pdf", "--out", f["existing.pdf"], f["page.png"]],
             all_of(refuses(r"exists.*--overwrite"),
                    lambda r: "right" if open(f["existing.pdf"], "rb").read() == b"keep me"
                    else "silently wrong")),
        Case("pdf-unwritable", "--out in a folder that does not exist", predict + [
            "--page", "--format", "pdf", "--out", "/nonexistent/dir/x.pdf", f["page.png"]],
             refuses(r"does not exist")),
        Case("pdf-out-input", "--out naming the input PDF, --overwrite: pdftotext of it",
             ["sh", "-c", '"$@" && pdftotext %s -' % f["doc.pdf"], "sh"] + predict + [
                 "--page", "--format", "pdf", "--out", f["doc.pdf"], "--overwrite",
                 f["doc.pdf"]], reads(b"quick brown fox", b"liquor jugs")),
        Case("pdf-crops", "--format pdf without --page", predict + ["--format", "pdf", "--out",
                                                                    out + "/y.pdf", f["hello.png"]],
             refuses(r"--page")),
        Case("pdf-all-bad", "--format pdf when every input is skipped", predict + [
            "--page", "--format", "pdf", "--out", out + "/z.pdf", f["truncated.pdf"]],
             all_of(refuses(r"no page could be read.*not written"),
                    lambda r: "silently wrong" if os.path.exists(out + "/z.pdf") else "right")),
        # ONNX
        Case("onnx", "--engine onnx on a crop", predict + ["--engine", "onnx", f["hello.png"]],
             reads(b"hello world")),
        Case("onnx-damaged", "a model.onnx with one byte changed", predict + [
            "--engine", "onnx", "--checkpoint", f["onnx_damaged"], f["hello.png"]],
             refuses(r"damaged")),
        Case("onnx-short", "a model.onnx cut short", predict + [
            "--engine", "onnx", "--checkpoint", f["onnx_short"], f["hello.png"]],
             refuses(r"onnx")),
        Case("onnx-tf-run", "--engine onnx on a TensorFlow run", predict + [
            "--engine", "onnx", "--checkpoint", f["run_copy"] + "/checkpoints", f["hello.png"]],
             refuses(r"onnx")),
        Case("tf-on-onnx", "--engine tf on an ONNX folder", predict + [
            "--checkpoint", f["onnx_damaged"], f["hello.png"]], refuses(r"onnx")),
        Case("onnx-zh-beam", "--engine onnx --model zh --beam-width 1000", predict + [
            "--engine", "onnx", "--model", "zh", "--beam-width", "1000", f["hello.png"]],
             refuses(r"too wide")),
        # evaluate
        Case("eval-good", "crnn-evaluate on a clean label file",
             evaluate + ["--data", f["labels_good"]], scores(good=True, n=2)),
    ]
    for name in LABEL_FILES:
        if name == "good":
            continue
        judge = {
            "extra_column": refuses(r"line 1"),
            "padded": refuses(r"line 1|space"),
            "empty_label": scores(n=2, word_accuracy=0.5),
            "no_tab": refuses(r"line 1.*tab|tab"),
            "crlf": scores(),
            "bom": scores(),
            "latin1": refuses(r"line 1.*UTF-8"),
            "missing_image": all_of(scores(n=2), reads(b"", err=r"none\.png")),
            "empty_file": refuses(r"labels"),
            "blank_lines": scores(),
        }[name]
        c.append(Case("eval-" + name, "crnn-evaluate, labels: %s" % name.replace("_", " "),
                      evaluate + ["--data", f["labels_" + name]], judge))
    c += [
        Case("eval-folder-missing", "crnn-evaluate --data missing",
             evaluate + ["--data", f["folder"] + "/nope"], refuses(r"nope")),
        Case("eval-data-image", "crnn-evaluate --data an image",
             evaluate + ["--data", f["hello.png"]], refuses(r"hello\.png")),
        # export
        Case("export-missing", "crnn-export --checkpoint missing", export + [
            "--checkpoint", f["folder"] + "/nope", "--out", out + "/e1"], refuses(r"nope")),
        Case("export-existing", "crnn-export --out an existing folder", export + [
            "--checkpoint", f["run_copy"], "--out", f["folder"]], refuses(r"exists")),
        Case("export-unwritable", "crnn-export --out under /proc", export + [
            "--checkpoint", f["run_copy"], "--out", "/proc/e2", "--format", "checkpoint"],
             refuses(r"/proc")),
        Case("export-onnx-dir", "crnn-export --checkpoint an ONNX folder", export + [
            "--checkpoint", f["onnx_damaged"], "--out", out + "/e3"], refuses(r"onnx|config")),
        # train --resume
        Case("resume-typo", "crnn-train --resume with a mistyped --out", train + [
            "--train", f["labels_good"], "--out", f["run_copy"] + "x", "--resume"],
             all_of(refuses(r"nothing to resume"), lambda r: "silently wrong"
                    if os.path.exists(f["run_copy"] + "x") else "right")),
        Case("resume-changed", "crnn-train --resume of the text run, --lr and charset changed", train + [
            "--train", f["labels_good"], "--out", f["run_copy"], "--resume", "--lr", "0.01",
            "--steps", "4001"], refuses(r"changes settings|differs")),
        Case("resume-file", "crnn-train --resume --out a file", train + [
            "--train", f["labels_good"], "--out", f["hello.png"], "--resume"],
             refuses(r"hello\.png")),
        # Python API
        Case("api-read", "Reader().read([page, missing]).skipped", api(
            "d = ocr.Reader().read([F['page.png'], F['hello.png'] + '.nope'])\n"
            "print(d.text); print(d.skipped)"), reads(b"quick brown", b"no such file")),
        Case("api-read-lines", "Reader().read_lines with a truncated crop", api(
            "try:\n  ocr.Reader().read_lines([F['hello.png'], F['truncated.png']])\n"
            "except ValueError as e:\n  print('ValueError', e)"),
             reads(b"ValueError cannot read crop", b"truncated.png")),
        Case("api-hocr", "to_hocr() with a non-UTF-8 name: well-formed", api(
            "d = ocr.Reader().read([F['page.png'], F['bad_utf8']])\n"
            "sys.stdout.write(d.to_hocr())"), all_of(xml_valid, reads(b"quick"))),
        Case("api-json", "to_json() with a TAB and a non-UTF-8 name, as JSON", api(
            "import json, shutil; shutil.copy(F['page.png'], F['tab\\tname.png'])\n"
            "d = ocr.Reader().read([F['tab\\tname.png'], F['bad_utf8']])\n"
            "print(json.dumps(d.to_json()))"),
             all_of(json_lines_valid, reads(b"quick", b"tab\\tname.png", b"bad\\udce9name"))),
        Case("api-save-pdf", "save_pdf into a folder that does not exist", api(
            "d = ocr.Reader().read([F['page.png']])\n"
            "try:\n  d.save_pdf('/nonexistent/dir/x.pdf')\nexcept (ValueError, OSError) as e:\n"
            "  print(type(e).__name__, e)"), reads(b"/nonexistent/dir")),
        Case("api-pages", "Reader().read(pdf, pages='x')", api(
            "try:\n  ocr.Reader().read(F['doc.pdf'], pages='x')\n"
            "except ValueError as e:\n  print('ValueError', e)"), reads(b"ValueError")),
        Case("api-model", "Reader(model='txet')", api(
            "try:\n  ocr.Reader(model='txet')\nexcept ValueError as e:\n  print('ValueError', e)"),
             reads(b"ValueError model 'txet' is neither a shipped model")),
        Case("api-array", "Reader().read_lines on an RGBA float array", api(
            "import numpy as np\nfrom PIL import Image\n"
            "a = np.asarray(Image.open(F['hello.png']).convert('RGBA')).astype('float32') / 255\n"
            "try:\n  print(ocr.Reader().read_lines([a]))\nexcept ValueError as e:\n"
            "  print('ValueError', e)"), reads(b"hello world")),
    ]
    return c


def run(case, timeout, env, cwd):
    """The :class:`Result` of ``case`` run in ``cwd`` (the fixtures' folder)."""
    try:
        done = subprocess.run(case.run, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired as expired:
        return Result(None, expired.stdout or b"", expired.stderr or b"", True)
    return Result(done.returncode, done.stdout, done.stderr, False)


def verdict(case, result):
    if result.hung:
        return "hang"
    if b"Traceback (most recent call last)" in result.err:
        return "traceback"
    return case.judge(result)


def shown(case):
    """The command as a user would type it, the fixture folder as ``$T``."""
    if case.run[:2] == ["sh", "-c"]:  # a tool, then a look at what it wrote
        return _tidy(" ".join(case.run[5:]).replace("-m crnn_multigpu.cli.", "crnn-")
                     + " && " + case.run[2].split("&& ", 1)[1])
    if case.run[1] == "-c":  # the Python API: the code after the fixture table
        return "python: " + _tidy(case.run[2].split("\n", 3)[3])
    words = []
    for word in case.run[1:]:
        word = os.fsdecode(word) if isinstance(word, bytes) else word
        words.append(word)
    return _tidy(" ".join(words).replace("-m crnn_multigpu.cli.", "crnn-"))


def _tidy(text):
    """``text`` on one table line: the fixture folder as $T, TAB, newline and a byte that is
    not UTF-8 (a name's) escaped."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    text = re.sub(r"/tmp/adversarial-[^/\s']*", "$T", text)
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("|", "\\|")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the Python whose crnn_multigpu the cases run")
    parser.add_argument("--only", default="", help="comma-separated case ids")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds a case may take")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="adversarial-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    os.environ.get("PYTHONPATH")] if p))
    try:
        f = fixtures(root)
        os.mkdir(os.path.join(root, "out"))
        chosen = set(filter(None, args.only.split(",")))
        todo = [c for c in cases(f, args.python) if not chosen or c.id in chosen]
        print("| # | case | what was run | what the user sees | verdict |")
        print("|---|---|---|---|---|")
        totals = collections.Counter()
        for number, case in enumerate(todo, 1):
            result = run(case, args.timeout, env, root)
            judged = verdict(case, result)
            totals[judged] += 1
            print("| %d | %s: %s | `%s` | %s | %s |" % (
                number, case.id, case.what, shown(case),
                seen(result).replace("|", "\\|").replace("`", "'"), judged), flush=True)
        print("\n%d cases: %s" % (len(todo), ", ".join(
            "%d %s" % (n, v) for v, n in sorted(totals.items()))))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
