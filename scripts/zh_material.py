"""The material of the project's Chinese checks: the reserved PDFs and their whole pages (cut and
read by ``pdf_material.py``), man-page prose printed in the reserved AR PL faces; and the line
printing they share with the project's own design check (``zh_design_check.py``).

The reserved material (``lshort-zh-cn.pdf`` and ``ctex-faq.pdf`` of texlive-lang-chinese, the
text of manpages-zh, the AR PL faces) is for ``compare_chinese.py``, the final check of a chosen
model; :func:`print_line` and :func:`line_window` also serve material of the project's own.
Needs ``scripts/install_system_packages.sh --compare`` for the reserved part.
"""
import glob
import math
import os
import shutil
import subprocess
import sys

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets.fonts import load_font  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from reports import fail  # noqa: E402

INSTALL_COMPARE = "scripts/install_system_packages.sh --compare"
LSHORT = "/usr/share/doc/texlive-doc/latex/lshort-chinese/lshort-zh-cn.pdf"
CTEX_FAQ = "/usr/share/doc/texlive-doc/latex/ctex-faq/ctex-faq.pdf"
# Whole pages: body text (running prose with headings, code and a list), not the title page.
WHOLE_PAGES = ((LSHORT, (14, 24, 107)), (CTEX_FAQ, (6, 13, 24)))
MAN_PAGES = "/usr/share/man/zh_CN/man*/*"
ARPHIC_DIRS = "/usr/share/fonts/truetype/arphic*"
MAX_LINE = 30          # characters of a rendered man-page line
MIN_HANZI = 6          # a man-page line is Chinese prose when it holds this many Hanzi
LINES_PER_MAN_PAGE = 3  # lines are spread over many man pages, not a few long ones
ZH = get_language("zh")


def check_material():
    """Stop unless the reserved material is installed."""
    missing = [path for path in (LSHORT, CTEX_FAQ) if not os.path.isfile(path)]
    if not glob.glob(MAN_PAGES):
        missing.append(os.path.dirname(os.path.dirname(MAN_PAGES)) + " (manpages-zh)")
    if not arphic_faces():
        missing.append("the AR PL faces (fonts-arphic-*)")
    for tool in ("pdftoppm", "pdftotext", "pdfinfo", "man", "col"):
        if shutil.which(tool) is None:
            missing.append(tool)
    if missing:
        fail("missing the reserved material: %s; run %s" % (", ".join(missing), INSTALL_COMPARE))



# ----- material 2: man-page prose in the AR PL faces ----------------------------------------

def arphic_faces():
    """The reserved AR PL faces of Simplified Chinese (GB and CN faces) that draw the charset.

    The HK and TW faces of the same collections draw the same characters in other regional
    forms, and the Big5 files (bkai00mp, bsmi00lp) are traditional Chinese: neither is
    Simplified Chinese print."""
    from crnn_multigpu.datasets.fonts import find_fonts, font_family
    dirs = sorted(glob.glob(ARPHIC_DIRS))
    if not dirs:
        return []
    try:
        faces = find_fonts(dirs, chars=ZH.charset.chars, include_reserved=True, language=ZH)
    except FileNotFoundError:
        return []
    return [face for face in faces if font_family(face).split()[-1] in ("GB", "CN")]


def man_text(path):
    """A man page as plain text: ``man -l`` at 200 columns, overstrikes removed (``col -b``)."""
    env = dict(os.environ, MANWIDTH="200", LANG="C.UTF-8")
    man = subprocess.Popen(["man", "-l", path], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, env=env)
    text = subprocess.run(["col", "-b"], stdin=man.stdout, stdout=subprocess.PIPE,
                          env=env).stdout
    man.stdout.close()
    man.wait()
    return text.decode("utf-8", "replace")


# Headings of the sections the Chinese translation project appends to a page (translators,
# dates, the project's name): credits, not the page's prose, and the same on every page.
CREDIT_HEADINGS = ("跋", "中文版", "翻译", "译者")


def man_paragraphs(text):
    """The body paragraphs of a man page as ``man`` prints it: headings (at the left margin),
    the running header and footer and the translators' credit sections left out; consecutive
    lines of one indentation joined (a paragraph wider than MANWIDTH wraps), a blank line or
    another indentation starting a new paragraph."""
    paragraphs, current, indent, keep = [], [], None, True
    for line in text.splitlines():
        line = line.expandtabs()
        stripped = line.strip()
        depth = len(line) - len(line.lstrip())
        if stripped and depth == 0:  # a heading, or the header or footer
            keep = not any(mark in stripped for mark in CREDIT_HEADINGS)
        if current and (not stripped or depth == 0 or depth != indent):
            paragraphs.append(" ".join(current))
            current = []
        if stripped and depth > 0 and keep:
            current.append(stripped)
            indent = depth
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def hanzi_count(text):
    """How many CJK unified ideographs ``text`` holds."""
    return sum(u"\u4e00" <= char <= u"\u9fff" for char in text)


def prose_units(text, language=ZH):
    """The sentences of ``text`` (``language.units``) that its charset writes and that are
    Chinese prose (:data:`MIN_HANZI` Hanzi at least), spelt and tidied."""
    units = []
    for unit in language.units(language.respell(text)):
        unit = language.tidy(unit)
        if hanzi_count(unit) >= MIN_HANZI and not language.charset.unknown_chars(unit):
            units.append(unit)
    return units


def line_window(unit, rng, max_len=MAX_LINE, language=ZH):
    """``unit`` if it fits in ``max_len`` characters, else a window of whole tokens (a Hanzi, a
    Latin word, a space) of it that does, starting at a token drawn with ``rng`` among those
    that leave at least half a line; tidied (no space at either end)."""
    if len(unit) <= max_len:
        return unit
    tokens = language.token.findall(unit)
    ends = np.cumsum([len(token) for token in tokens])
    starts = [i for i in range(len(tokens))
              if len(unit) - (ends[i] - len(tokens[i])) >= max_len // 2] or [0]
    start = starts[rng.randint(len(starts))]
    picked = []
    for token in tokens[start:]:
        if len(language.joiner.join(picked + [token])) > max_len:
            break
        picked.append(token)
    return language.tidy(language.joiner.join(picked or [tokens[start][:max_len]]))


def print_line(text, face, size):
    """``text`` printed black on white in ``face`` at ``size`` px, as a page's line: framed by
    the face's own line height, with a fifth of it as margin around."""
    font = load_font(face, size)
    ascent, descent = font.getmetrics()
    pad = max(2, (ascent + descent) // 5)
    width = int(math.ceil(font.getlength(text)))
    image = Image.new("L", (width + 2 * pad, ascent + descent + 2 * pad), 255)
    ImageDraw.Draw(image).text((pad, pad), text, fill=0, font=font)
    return image


def man_lines(out, count, seed, faces):
    """``(samples [(path, label)], man pages read)``: ``count`` lines of man-page prose,
    printed in ``faces`` (:func:`print_line`, body-text sizes at 150 dpi: 18-30 px). Man pages
    are visited in an order drawn with ``seed``, at most :data:`LINES_PER_MAN_PAGE` lines
    each."""
    rng = np.random.RandomState(seed)
    pages = sorted(path for path in glob.glob(MAN_PAGES) if os.path.isfile(path))
    lines, seen, read = [], set(), 0
    for index in rng.permutation(len(pages)):
        if len(lines) >= count:
            break
        units = prose_units("\n\n".join(man_paragraphs(man_text(pages[index]))))
        read += 1
        for unit_index in rng.permutation(len(units))[:LINES_PER_MAN_PAGE]:
            line = line_window(units[unit_index], rng)
            if hanzi_count(line) >= MIN_HANZI and line not in seen and len(lines) < count:
                seen.add(line)
                lines.append(line)
    samples = []
    for index, line in enumerate(lines):
        image = print_line(line, faces[rng.randint(len(faces))], rng.randint(18, 31))
        path = os.path.join(out, "manline%05d.png" % index)
        image.save(path)
        samples.append((path, line))
    return samples, read
