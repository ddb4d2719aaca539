"""The project's Chinese OCR beside Tesseract 5 chi_sim and PP-OCRv4, on the same images; one table.

Usage::

    python scripts/compare_chinese.py --checkpoint RUN_OR_MODEL_DIR        # the full check
    python scripts/compare_chinese.py --checkpoint RUN_OR_MODEL_DIR --quick --json figures.json

This is the project's final check of a Chinese model, on material reserved for it (no model
trains, validates or is chosen on any of it; fixed seeds):

1. lines cut from the two reserved PDFs of Debian's texlive-lang-chinese (lshort-zh-cn.pdf and
   ctex-faq.pdf, half each): pages drawn with the seed, a few rows a page, rasterised at 150 dpi
   (``pdftoppm -gray``), rows found by the project's own page reader and labelled with the text
   layer as ``scripts/pdf_training_set.py`` labels them (``page_check.labelled_rows``); rows the charset
   cannot write are left out and counted;
2. lines of Chinese prose from Debian's manpages-zh (``man -l`` as plain text, cut into
   sentences and windows of at most 30 characters), rendered in the reserved AR PL faces (the
   GB and CN faces of fonts-arphic-ukai, -uming, -gbsn00lp, -gkai00mp), printed black on white
   at body-text sizes;
3. six whole pages of the two PDFs (three each, fixed body pages) at 150 dpi, scored against
   the text layer's rows.

Every system reads exactly the same image files: the project through its library (one process,
its start-up, TensorFlow's import included, counted once), Tesseract one process per image as
its command line is used (``-l chi_sim``, ``--psm 7`` for a line, ``--psm 4`` for a page,
OMP_THREAD_LIMIT=1), PP-OCRv4 through ``scripts/rapidocr_read.py`` in its own venv
(``.venv-rapidocr``: pip's rapidocr-onnxruntime 1.4.4, never a dependency of the package), one
process per kind of material, its start-up counted once: lines by its recogniser alone, pages
by its whole pipeline. Scoring is blind to blanks and to full-width forms (NFKC, every
whitespace dropped): lines exactly right and CER; pages: rows exactly right (each text-layer row
matched once by an equal row read, in any order) and the CER of the whole page.

Needs ``scripts/install_system_packages.sh --compare`` (Tesseract's chi_sim, the PDFs, the
man pages, the AR PL faces) and ``make venv-rapidocr``.
"""
import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.ocr.metrics import scoring_fold, text_metrics  # noqa: E402
from crnn_multigpu.ocr.shipped import shipped_model  # noqa: E402
from pdf_material import DPI, pdf_lines, whole_pages  # noqa: E402
from pp_ocr import MISSING, PaddleOcr, rapidocr_ready  # noqa: E402
from reports import fail, save_picture  # noqa: E402
from side_by_side import (TESSERACT_PAGE_PSM, Project, Tesseract, cell,  # noqa: E402
                          check_checkpoint as check_model, markdown_table,
                          page_scores as folded_page_scores, shown_chars, tesseract_languages)
from zh_material import (CTEX_FAQ, INSTALL_COMPARE, LSHORT, MAX_LINE, WHOLE_PAGES,  # noqa: E402
                         ZH, arphic_faces, check_material, man_lines)

DEFAULT_CHECKPOINT = shipped_model("zh")
FOLD = scoring_fold(nfkc_blank_blind=True)


# ----- the peers and what they need ------------------------------------------------------

def missing_peers(languages, rapidocr_found):
    """What to install for the peers, one entry each: ``languages`` as
    :func:`tesseract_languages` gives them, ``rapidocr_found`` as :func:`rapidocr_ready`."""
    missing = []
    if languages is None:
        missing.append("Tesseract 5 with its chi_sim model (%s)" % INSTALL_COMPARE)
    elif "chi_sim" not in languages:
        missing.append("Tesseract's chi_sim model (%s)" % INSTALL_COMPARE)
    if not rapidocr_found:
        missing.append(MISSING)
    return missing


def require_peers():
    """Stop with one line naming what to install when a peer is missing."""
    missing = missing_peers(tesseract_languages(), rapidocr_ready())
    if missing:
        fail("missing %s" % "; ".join(missing))


def check_checkpoint(path):
    """Stop unless ``path`` is a run or model folder of a Chinese model."""
    check_model(path, ZH.name)


# ----- scoring and the table --------------------------------------------------------------

def line_figures(readings, labels):
    """Lines exactly right and CER, readings and labels folded (NFKC, no whitespace)."""
    return text_metrics([FOLD(text) for text in readings], [FOLD(text) for text in labels])


def page_scores(read_rows, truth_rows_):
    """``[edits, characters, rows exactly right, rows]`` of one page, folded (NFKC, no
    whitespace; ``side_by_side.page_scores``)."""
    return folded_page_scores(read_rows, truth_rows_, FOLD, "")


# ----- the picture ------------------------------------------------------------------------

PICTURE_FONTS = (("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", "WenQuanYi Micro Hei"),
                 ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", "Noto Sans CJK SC"))


def picture_font(size):
    """A CJK font that is not reserved (WenQuanYi Micro Hei, else Noto Sans CJK SC), or None."""
    from PIL import ImageFont
    for path, family in PICTURE_FONTS:
        for index in range(12):
            try:
                font = ImageFont.truetype(path, size, index=index)
            except (OSError, IOError):
                break
            if font.getname()[0] == family:
                return font
    return None


def side_by_side(samples, readings, path, count=12):
    """A PNG of ``count`` line samples (half from each list of ``samples``, those the systems
    disagree on first): the crop, the truth and each system's reading, green when it scores as
    exact, red when not. ``samples``: lists of ``(path, label)``; ``readings``: ``[(system,
    [lists of texts, one per list of samples])]``."""
    from PIL import ImageDraw
    font = picture_font(18)
    if font is None:
        print("warning: no CJK font for the picture (fonts-wqy-microhei); not written",
              file=sys.stderr)
        return None
    chosen = []
    for which, kind in enumerate(samples):
        share = count // len(samples) + (1 if which < count % len(samples) else 0)
        right = [all(FOLD(texts[which][i]) == FOLD(kind[i][1]) for _, texts in readings)
                 for i in range(len(kind))]
        order = [i for i in range(len(kind)) if not right[i]] + \
            [i for i in range(len(kind)) if right[i]]
        chosen.extend((which, i) for i in order[:share])
    crop_height, text_height, gap = 40, 24, 14
    names = ["truth"] + [name for name, _ in readings]
    label_width = max(int(font.getlength(name)) for name in names) + 16
    blocks, width = [], 400
    for which, i in chosen:
        crop = Image.open(samples[which][i][0]).convert("L")
        crop = crop.resize((max(1, int(crop.width * float(crop_height) / crop.height)),
                            crop_height))
        texts = [samples[which][i][1]] + [texts[which][i] for _, texts in readings]
        width = max([width, crop.width + 8] +
                    [label_width + int(font.getlength(text)) + 8 for text in texts])
        blocks.append((crop, texts))
    block_height = crop_height + 4 + text_height * len(names) + gap
    canvas = Image.new("RGB", (min(width, 1800), max(1, block_height * len(blocks))), "white")
    draw, y = ImageDraw.Draw(canvas), 0
    for crop, texts in blocks:
        canvas.paste(crop.convert("RGB"), (4, y))
        y += crop_height + 4
        for row, (name, text) in enumerate(zip(names, texts)):
            colour = (0, 0, 0) if row == 0 else \
                (0, 120, 0) if FOLD(text) == FOLD(texts[0]) else (190, 0, 0)
            draw.text((4, y), name, fill=(90, 90, 90), font=font)
            draw.text((label_width, y), text, fill=colour, font=font)
            y += text_height
        y += gap
    save_picture(canvas, path)
    return path


# ----- the comparison ---------------------------------------------------------------------

def read_line_sets(sets, project, tesseract, paddle, scratch):
    """Each system's readings of each list of line samples, and its seconds per line: the
    project's and PP-OCR's without their start-ups, Tesseract's with its own in every process
    (one a line, as it is run)."""
    readings = dict((name, []) for name in ("project", "tesseract", "paddle"))
    seconds = dict((name, 0.0) for name in readings)
    for samples in sets:
        paths = [path for path, _ in samples]
        started = time.time()
        readings["project"].append(project.read_lines(paths, ZH.tidy))
        middle = time.time()
        readings["tesseract"].append(tesseract.read_lines(paths, ZH.tidy))
        seconds["project"] += middle - started
        seconds["tesseract"] += time.time() - middle
        # PP-OCR's start-up left out, as the project's is for lines.
        paddle_read = paddle.read("line", paths, scratch)
        readings["paddle"].append(paddle_read.texts)
        seconds["paddle"] += sum(paddle_read.seconds)
    total = max(1, sum(len(samples) for samples in sets))
    return readings, dict((name, value / total) for name, value in seconds.items())


def read_pages(pages, project, tesseract, paddle, scratch):
    """Summed page scores of each system and its seconds per page (start-ups counted once:
    the project's in ``project.startup``, PP-OCR's in its process)."""
    totals = dict((name, np.zeros(4)) for name in ("project", "tesseract", "paddle"))
    seconds = dict((name, 0.0) for name in totals)
    paddle_read = paddle.read("page", [path for path, _, _ in pages], scratch)
    seconds["paddle"] = paddle_read.wall
    for (path, truth, name), theirs_paddle in zip(pages, paddle_read.texts):
        started = time.time()
        ours = project.read_page(path, ZH.tidy)
        middle = time.time()
        theirs = tesseract.read_page(path, ZH.tidy)
        seconds["project"] += middle - started
        seconds["tesseract"] += time.time() - middle
        scores = [("project", ours), ("tesseract", theirs), ("paddle", theirs_paddle)]
        for system, rows in scores:
            totals[system] += page_scores(rows, truth)
        print("page %s: %d rows; rows exactly right: %s" % (
            name, len(truth), ", ".join("%s %d" % (system, page_scores(rows, truth)[2])
                                        for system, rows in scores)), file=sys.stderr)
    seconds["project"] += project.startup
    return totals, dict((name, value / max(1, len(pages))) for name, value in seconds.items())


def main(argv=None):
    """Build the reserved material, read it with the three systems, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT,
                        help="the Chinese model: a run or model folder (default: models/zh)")
    parser.add_argument("--quick", action="store_true",
                        help="40 lines of each kind and 2 pages (a smoke run)")
    parser.add_argument("--json", help="write the figures to this JSON file")
    parser.add_argument("--out", help="keep the images in this folder (default: a temporary one)")
    parser.add_argument("--picture", help="the side-by-side PNG (default: compare_chinese.png "
                                          "in --out, else in the current folder)")
    parser.add_argument("--lines", type=int, default=300, help="lines of each kind")
    parser.add_argument("--page-psm", type=int, default=TESSERACT_PAGE_PSM,
                        help="Tesseract's page segmentation for whole pages (4: one column of "
                             "lines of varying sizes; 6: one uniform block)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    check_checkpoint(args.checkpoint)
    require_peers()
    check_material()
    count = 40 if args.quick else args.lines
    pages = [(pdf, numbers[0]) for pdf, numbers in WHOLE_PAGES] if args.quick else \
        [(pdf, page) for pdf, numbers in WHOLE_PAGES for page in numbers]
    started = time.time()
    scratch = args.out or tempfile.mkdtemp(prefix="compare_chinese-")
    os.makedirs(scratch, exist_ok=True)
    try:
        faces = arphic_faces()
        cut, report = pdf_lines(scratch, (LSHORT, CTEX_FAQ), count, args.seed, ZH,
                                skip_pages=[(pdf, page) for pdf, numbers in WHOLE_PAGES
                                            for page in numbers])
        print("PDF lines: %d cut from %d pages" % (len(cut), report["pages"]), file=sys.stderr)
        rendered, man_read = man_lines(scratch, count, args.seed, faces)
        print("man-page lines: %d from %d man pages, in %d faces" % (
            len(rendered), man_read, len(faces)), file=sys.stderr)
        page_set = whole_pages(scratch, pages, ZH)
        tesseract, paddle = Tesseract("chi_sim", args.page_psm), PaddleOcr(ZH.tidy,
                                                                           ZH.join_pieces)
        project = Project(args.checkpoint)
        readings, line_seconds = read_line_sets([cut, rendered], project, tesseract, paddle,
                                                scratch)
        totals, page_seconds = read_pages(page_set, project, tesseract, paddle, scratch)
        picture = args.picture or os.path.join(args.out or ".", "compare_chinese.png")
        side_by_side([cut, rendered], [(project.name, readings["project"]),
                                       (tesseract.name, readings["tesseract"]),
                                       (paddle.name, readings["paddle"])], picture)
    finally:
        if not args.out:
            shutil.rmtree(scratch, ignore_errors=True)
    systems = ("project", "tesseract", "paddle")
    names = [project.name, tesseract.name, paddle.name]
    figures = collections.OrderedDict()
    materials = (("pdf_lines", "lines cut from the 2 reserved PDFs, %d dpi: lines exactly right "
                               "/ CER" % DPI, cut, 0),
                 ("man_lines", "man-page prose in %d AR PL faces, at most %d characters: lines "
                               "exactly right / CER" % (len(faces), MAX_LINE), rendered, 1))
    rows = []
    for key, title, samples, which in materials:
        labels = [label for _, label in samples]
        scored = dict((system, line_figures(readings[system][which], labels))
                      for system in systems)
        figures[key] = dict(n=len(samples), **dict(
            (system, dict(exact=scored[system]["word_accuracy"], cer=scored[system]["cer"]))
            for system in systems))
        rows.append((title, str(len(samples)), [cell(scored[s]["word_accuracy"], scored[s]["cer"])
                                                for s in systems]))
    n_rows = int(totals["project"][3])
    figures["pages"] = dict(n=len(page_set), rows=n_rows, pages=[name for _, _, name in page_set],
                            tesseract_psm=args.page_psm, **dict(
                                (system, dict(rows_exact=totals[system][2] / max(1, n_rows),
                                              cer=totals[system][0] / max(1, totals[system][1]),
                                              seconds_per_page=page_seconds[system]))
                                for system in systems))
    rows.append(("%d whole pages, %d dpi: rows exactly right / page CER" % (len(page_set), DPI),
                 "%d pages, %d rows" % (len(page_set), n_rows),
                 [cell(figures["pages"][s]["rows_exact"], figures["pages"][s]["cer"])
                  for s in systems]))
    rows.append(("seconds per page (wall; start-ups counted once)", str(len(page_set)),
                 ["%.2f" % page_seconds[s] for s in systems]))
    figures["seconds_per_line"] = line_seconds
    unwritable = shown_chars(char for char, _ in report["unwritable"].most_common(20))
    figures["pdf_rows"] = dict(pages_visited=report["pages"], text_layer_rows=report["rows"],
                               found_exactly=report["exact"], pieces=report["pieces"],
                               left_out=report["left_out"], unwritable_characters=unwritable)
    figures.update(systems=dict(zip(systems, names)), checkpoint=args.checkpoint,
                   seed=args.seed, quick=args.quick, man_pages_read=man_read,
                   faces=[os.path.basename(face) for face in faces],
                   seconds=time.time() - started)
    print(markdown_table(names, rows))
    print()
    print("PDF lines: %d pages visited (of lshort-zh-cn.pdf and ctex-faq.pdf, not the whole "
          "pages) hold %d text-layer rows; left out: %d rows the page reader did not find as "
          "one row of its own (not cut), and %d of the %d pieces of the rows found because the "
          "charset cannot write them (characters: %s); the lines were drawn from the rest"
          % (report["pages"], report["rows"], report["rows"] - report["exact"],
             report["left_out"], report["pieces"], unwritable or "none"))
    print("man-page lines: from %d man pages of manpages-zh; faces: %s"
          % (man_read, ", ".join(os.path.basename(face) for face in faces)))
    print("pages: %s; Tesseract --psm %d; project start-up %.1f s (TensorFlow's import "
          "included), counted once over all pages; seconds per line: %s"
          % (", ".join(name for _, _, name in page_set), args.page_psm, project.startup,
             ", ".join("%s %.2f" % (n, line_seconds[s]) for n, s in zip(names, systems))))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
