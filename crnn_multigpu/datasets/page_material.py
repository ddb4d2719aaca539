"""Pages with exact line boxes, for free: the material a text detector learns from.

Two makes of page, both printed to PDF so that the text layer gives every line's box:

* **browser prints**: Debian's HTML documentation (``debian-reference-*`` in every language,
  ``python3-doc``, other ``*-doc`` HTML) printed by headless Chromium with CSS chosen by a
  seeded recipe (``datasets.page_style``: faces of the installed training families, sizes, one
  to three columns, tables with rules, borders, grey boxes, dotted separators, backgrounds,
  margins, headings);
* **typeset PDFs**: documentation PDFs of TeX Live and other packages, as they ship.

Each chosen page is drawn by poppler (``datasets.pdf.render_page``) at a resolution of its own,
and its lines' boxes are read from ``pdftotext -bbox-layout`` (PDF points, scaled to the page
image's pixels). A line's box spans its words' advance widths and the faces' ascent to descent:
it holds the line's ink, somewhat taller than the ink itself.

Written material is a folder: ``pages/NNNNNN.png`` (grey) and ``pages.jsonl``, one JSON object a
line per page: ``image`` (the path relative to the folder), ``width``, ``height``, ``dpi``,
``source`` (the HTML or PDF file), ``page`` (1-based page of the print), ``make`` ("browser" or
"typeset"), ``recipe`` (the CSS recipe, browser prints only) and ``lines``: ``[x0, y0, x1, y1,
text]`` per line, in pixel edges of the image (x right, y down), in the text layer's order.

Kept out (``text_sources.is_reserved_document``): every document the project reserves for its independent
checks, and typeset PDFs whose fonts may be reserved faces (``datasets.pdf.font_refusal``).
"""
import html
import json
import os
import random
import re
import shutil
import subprocess
import tempfile

from crnn_multigpu.datasets.page_style import column_of, page_recipe, recipe_css
from crnn_multigpu.datasets.pdf import font_refusal, page_count, poppler, render_page
from crnn_multigpu.datasets.text_sources import is_reserved_document

__all__ = ["HTML_ROOTS", "PDF_ROOTS", "html_documents", "typeset_pdfs",
           "print_html", "line_boxes", "join_rows", "read_material", "MaterialWriter", "CHROMIUM",
           "generate"]

HTML_ROOTS = ("/usr/share/debian-reference", "/usr/share/doc/python3-doc/html",
              "/usr/share/doc/texlive-doc")
PDF_ROOTS = ("/usr/share/doc/texlive-doc",)
CHROMIUM = "chromium"
# HTML smaller than this is an index, a redirect or a stub: nothing to print.
MIN_HTML_BYTES = 4000
PRINT_TIMEOUT_S = 300
BLOCK_RE = re.compile(r"<block [^>]*>(.*?)</block>", re.S)
LINE_RE = re.compile(r'<line xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" '
                     r'yMax="([-\d.]+)">(.*?)</line>', re.S)
# Two lines of one block sharing this much of the lower one's height are pieces of one row.
ROW_OVERLAP = 0.8
# A piece that starts where pieces of at least this many other rows start (within
# COLUMN_EDGE of a row's height) begins a column: Chromium's print of CSS columns gives the
# rows of two columns side by side as one block, whose rows are no lines.
COLUMN_ROWS = 2
COLUMN_EDGE = 0.15
WORD_RE = re.compile(r"<word [^>]*>(.*?)</word>", re.S)
PAGE_RE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)"')


def _files(roots, extension):
    found = []
    for root in roots:
        for folder, _, names in os.walk(root):
            found.extend(os.path.join(folder, n) for n in names if n.lower().endswith(extension))
    return sorted(path for path in set(found) if not is_reserved_document(path))


def html_documents(roots=HTML_ROOTS):
    """The HTML files under ``roots`` worth printing (not reserved, not stubs), sorted."""
    return [path for path in _files(roots, ".html") if os.path.getsize(path) >= MIN_HTML_BYTES]


def typeset_pdfs(roots=PDF_ROOTS):
    """The PDFs under ``roots`` that are not reserved, sorted; whether their fonts allow
    training (``datasets.pdf.font_refusal``) is asked when one is chosen (``generate``)."""
    return _files(roots, ".pdf")


def print_html(source, css, out_pdf, chromium=CHROMIUM):
    """Print the HTML file ``source`` to ``out_pdf`` with headless Chromium, ``css`` added after
    the document's own styles (its relative links still resolve: a ``<base>`` points at its
    folder). A new browser profile each time, so no print depends on an earlier one.
    ValueError naming the file when Chromium is missing, fails or hangs."""
    with open(source, "rb") as stream:
        text = stream.read().decode("utf-8", "replace")
    head = '<base href="file://%s/"><style>%s</style>' % (
        html.escape(os.path.dirname(os.path.abspath(source))), css)
    # The style goes last in <head>, after the document's stylesheet links, so it wins ties.
    text, found = re.subn(r"</head\s*>", lambda _: head + "</head>", text, count=1, flags=re.I)
    if not found:
        text = head + text
    work = tempfile.mkdtemp(prefix="page_material_")
    try:
        page = os.path.join(work, "page.html")
        with open(page, "w", encoding="utf-8") as stream:
            stream.write(text)
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update",
                   "--disable-sync", "--user-data-dir=" + os.path.join(work, "profile"),
                   "--no-pdf-header-footer", "--print-to-pdf=" + os.path.abspath(out_pdf),
                   "file://" + page]
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=PRINT_TIMEOUT_S)
        except OSError:
            raise ValueError("cannot print %s: %s is not installed (apt-get install chromium, "
                             "or scripts/install_system_packages.sh --detector)"
                             % (source, chromium))
        except subprocess.TimeoutExpired:
            raise ValueError("cannot print %s: Chromium did not finish within %d s"
                             % (source, PRINT_TIMEOUT_S))
        if done.returncode or not os.path.isfile(out_pdf):
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ValueError("cannot print %s: Chromium failed (%s)"
                             % (source, said[-1] if said else "exit %d" % done.returncode))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def line_boxes(pdf, page, dpi, recipe=None):
    """The lines of page ``page`` (1-based) of ``pdf`` as its text layer gives them, each
    ``[x0, y0, x1, y1, text]`` in pixels of the page drawn at ``dpi``; lines without text or
    with an empty box are left out, and the pieces of one row joined (``join_rows``). The
    lines of a browser print of ``recipe`` (its page style) come column after column: poppler
    orders the blocks of CSS columns by height, across the columns."""
    layout = poppler(["pdftotext", "-bbox-layout", "-f", str(page), "-l", str(page),
                      os.fspath(pdf), "-"], pdf).decode("utf-8", "replace")
    scale = dpi / 72.0
    page_width = float(PAGE_RE.search(layout).group(1)) * scale
    lines = []
    for block in BLOCK_RE.findall(layout):
        pieces = []
        for found in LINE_RE.finditer(block):
            x0, y0, x1, y1 = (float(found.group(i)) * scale for i in range(1, 5))
            text = " ".join(html.unescape(w).strip() for w in WORD_RE.findall(found.group(5)))
            if text.strip() and x1 > x0 and y1 > y0:
                pieces.append([x0, y0, x1, y1, text.strip()])
        lines.extend([round(v, 2) for v in row[:4]] + [row[4]] for row in join_rows(pieces))
    if recipe is None:
        return lines
    return in_column_order(lines, lambda line: column_of(line[0], recipe, page_width))


def in_column_order(lines, column):
    """``lines`` in reading order, ``column(line)`` giving each line's column: column after
    column, top to bottom in each, and the lines of one row (a table's cells, sharing
    :data:`ROW_OVERLAP` of the lower one's height) left to right."""
    rows = []
    for line in sorted(lines, key=lambda line: (column(line), line[1])):
        row = rows[-1] if rows else None
        if row and column(row[0]) == column(line) and (
                min(row[0][3], line[3]) - max(row[0][1], line[1]) >=
                ROW_OVERLAP * min(row[0][3] - row[0][1], line[3] - line[1])):
            row.append(line)
        else:
            rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda line: line[0])]


def join_rows(pieces):
    """The ``[x0, y0, x1, y1, text]`` lines of one text block with the pieces of a row made one
    line (boxes joined, texts in order from left to right). poppler cuts a line where its words
    stand far apart, as justified lines of narrow columns do, into pieces of one or a few words;
    a detector taught such pieces would learn words on some rows and lines on others. A piece
    that starts a column (:func:`column_starts`) begins a line of its own."""
    rows = []
    for piece in pieces:
        for row in rows:
            shared = min(row[0][3], piece[3]) - max(row[0][1], piece[1])
            if shared >= ROW_OVERLAP * min(row[0][3] - row[0][1], piece[3] - piece[1]):
                row.append(piece)
                break
        else:
            rows.append([piece])
    starts = column_starts(rows)
    joined, edges = [], []
    for row in rows:
        row.sort(key=lambda piece: piece[0])
        lines = [[row[0]]]
        for piece in row[1:]:
            if starts(piece):
                lines.append([piece])
                edges.append((piece[0], COLUMN_EDGE * (piece[3] - piece[1])))
            else:
                lines[-1].append(piece)
        joined.extend([min(p[0] for p in line), min(p[1] for p in line), max(p[2] for p in line),
                       max(p[3] for p in line), " ".join(p[4] for p in line)] for line in lines)
    # In reading order: a column's lines after the lines of the columns left of it.
    lefts = []  # each column's left edge (less its tolerance), left to right
    for start, near in sorted(edges):
        if not lefts or start - near > lefts[-1] + 2 * near:
            lefts.append(start - near)
    return sorted(joined, key=lambda line: sum(left <= line[0] for left in lefts))


def column_starts(rows):
    """Whether a piece of ``rows`` (lists of pieces) starts where pieces of at least
    :data:`COLUMN_ROWS` other rows start: a column's left edge, where a justified row's inner
    pieces start anywhere."""
    def starts(piece):
        near = COLUMN_EDGE * (piece[3] - piece[1])
        return sum(any(abs(other[0] - piece[0]) <= near for other in row)
                   for row in rows if piece not in row) >= COLUMN_ROWS
    return starts


class MaterialWriter(object):
    """Writes pages and their line boxes into a material folder (see the module docstring),
    appending to ``pages.jsonl`` page by page so that an interrupted run keeps what it wrote;
    a folder already holding material is continued, its numbering kept."""

    def __init__(self, folder):
        self.folder = folder
        os.makedirs(os.path.join(folder, "pages"), exist_ok=True)
        self.index = os.path.join(folder, "pages.jsonl")
        self.count = sum(1 for _ in read_material(folder)) if os.path.exists(self.index) else 0

    def add(self, pdf, page, dpi, make, source, recipe=None):
        """Draw page ``page`` of ``pdf`` at ``dpi``, write it with its lines; returns the
        entry written (None for a page without text)."""
        image = render_page(pdf, page, dpi)
        lines = [line for line in line_boxes(pdf, page, dpi, recipe)
                 if _on_page(line, image.size)]
        if not lines:
            return None
        relative = "pages/%06d.png" % self.count
        image.save(os.path.join(self.folder, relative), compress_level=1)
        entry = dict(image=relative, width=image.width, height=image.height, dpi=dpi,
                     source=source, page=page, make=make, recipe=recipe, lines=lines)
        with open(self.index, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self.count += 1
        return entry


def _on_page(line, size):
    """Whether at least half of ``line``'s box lies on the page; it is then cut to the page."""
    x0, y0, x1, y1 = line[:4]
    width, height = size
    inside = (max(0.0, min(x1, width) - max(x0, 0.0)) * max(0.0, min(y1, height) - max(y0, 0.0)))
    if inside < 0.5 * (x1 - x0) * (y1 - y0):
        return False
    line[:4] = [max(x0, 0.0), max(y0, 0.0), min(x1, width), min(y1, height)]
    return True


def read_material(folder):
    """The entries of the material folder ``folder``, one dict per page (see the module
    docstring), ``image`` made a full path. ValueError naming the file and line when an entry
    is not what ``MaterialWriter`` writes."""
    index = os.path.join(folder, "pages.jsonl")
    try:
        stream = open(index, encoding="utf-8")
    except OSError as error:
        raise ValueError("cannot read page material %s: %s (make it with "
                         "scripts/make_page_material.py)" % (index, error.strerror))
    with stream:
        for number, text in enumerate(stream, 1):
            if not text.strip():
                continue
            try:
                entry = json.loads(text)
                entry["image"] = os.path.join(folder, entry["image"])
                if not all(len(line) == 5 for line in entry["lines"]):
                    raise ValueError("a line is not [x0, y0, x1, y1, text]")
            except (ValueError, KeyError, TypeError) as error:
                raise ValueError("%s line %d is not a page entry (%s); remove the line or make "
                                 "the material again" % (index, number, error))
            yield entry



def generate(folder, pages, faces, seed=0, dpi=(96, 200), typeset_share=0.3, per_document=3,
             html_roots=HTML_ROOTS, pdf_roots=PDF_ROOTS, log=print):
    """Write ``pages`` pages of material into ``folder`` (continuing what it holds; give a
    continued folder another ``seed``, or the same documents come again): each print is a
    document chosen at random, typeset with probability ``typeset_share``, else an HTML
    document printed in a style drawn from ``faces`` (font files); up to ``per_document`` of
    its pages are drawn, each at a resolution in ``dpi`` (low, high). A print whose fonts may
    be reserved faces (a typeset PDF's, or a face Chromium fell back on) is left out, and a
    document that cannot be printed or read is logged and left out. Returns the writer."""
    rng = random.Random(seed)
    documents, pdfs = html_documents(html_roots), typeset_pdfs(pdf_roots)
    if documents and shutil.which(CHROMIUM) is None:
        raise ValueError("printing HTML needs %s: apt-get install chromium (or "
                         "scripts/install_system_packages.sh --detector)" % CHROMIUM)
    writer = MaterialWriter(folder)
    work = tempfile.mkdtemp(prefix="page_material_")
    try:
        while writer.count < pages:
            if not documents and not pdfs:
                raise ValueError("no document left to print under %s and %s" % (
                    ", ".join(html_roots), ", ".join(pdf_roots)))
            typeset = bool(pdfs) and (not documents or rng.random() < typeset_share)
            source = rng.choice(pdfs if typeset else documents)
            recipe = None if typeset else page_recipe(rng, faces)
            pdf = source if typeset else os.path.join(work, "print.pdf")
            try:
                if not typeset:
                    print_html(source, recipe_css(recipe), pdf)
                why = font_refusal(pdf)
                if why:
                    raise ValueError("its fonts may not be trained on (%s)" % why)
                count = page_count(pdf)
                for page in sorted(rng.sample(range(1, count + 1), min(per_document, count))):
                    if writer.count < pages:
                        writer.add(pdf, page, rng.randint(*dpi), "typeset" if typeset
                                   else "browser", source, recipe)
            except ValueError as error:
                log("left out %s: %s" % (source, error))
                # Another style may print an HTML document in allowed faces; a PDF stays as it is.
                if typeset or "fonts may not" not in str(error):
                    (pdfs if typeset else documents).remove(source)
                continue
            log("%d of %d pages (%s)" % (writer.count, pages, source))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return writer
