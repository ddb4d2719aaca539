"""Page material for the text detector (datasets.page_material, datasets.page_style): browser
prints and typeset PDFs whose line boxes, read from the text layer, match the ink of the drawn
page; the folder format; reserved documents kept out."""
import json
import random

import numpy as np
import pytest
from PIL import Image

from crnn_multigpu.datasets import page_crops, page_material, page_style
from crnn_multigpu.datasets.page_crops import PageCrops, split_by_source
from crnn_multigpu.datasets.page_style import page_recipe, printable_faces, recipe_css
from crnn_multigpu.datasets.text_sources import is_reserved_document
from faces import tiny_faces
from text_pdf import write_text_pdf

DPI = 100
WORDS = ("detector material every line box ink page column table rule shade heading paper "
         "margin print browser typeset").split()
# Dark enough to be a glyph's ink, not a grey shade (the shades go down to 200).
INK = 128


def sentence(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words))


def document(path, seed=0):
    """An HTML page of what documentation holds: headings, paragraphs, a table, code, a note."""
    rng = random.Random(seed)
    rows = "".join("<tr><td>%s</td><td>%s</td></tr>" % (sentence(rng, 2), sentence(rng, 3))
                   for _ in range(4))
    paragraphs = "".join("<p>%s</p>" % sentence(rng, 40) for _ in range(8))
    path.write_text(
        "<html><head><title>t</title></head><body><h1>%s</h1>%s<table><tr><th>name</th>"
        "<th>value</th></tr>%s</table><pre>%s\n%s</pre><div class='note'><p>%s</p></div><hr/>"
        "<h2>%s</h2>%s</body></html>" % (sentence(rng, 3), paragraphs, rows, sentence(rng, 4),
                                         sentence(rng, 5), sentence(rng, 20), sentence(rng, 2),
                                         paragraphs))
    return str(path)


def printed(tmp_path, decorated, seed):
    recipe = page_recipe(random.Random(seed), printable_faces(tiny_faces()), decorated=decorated)
    recipe.update(columns=2, paper_grey=255, text_grey=0)
    pdf = str(tmp_path / "print.pdf")
    page_material.print_html(document(tmp_path / "doc.html"), recipe_css(recipe), pdf)
    entry = page_material.MaterialWriter(str(tmp_path / "material")).add(
        pdf, 1, DPI, "browser", "doc.html", recipe)
    image = np.asarray(Image.open(str(tmp_path / "material" / entry["image"])))
    return entry, image


def box_mask(lines, shape, grow=1):
    mask = np.zeros(shape, bool)
    for x0, y0, x1, y1, _ in lines:
        mask[max(int(y0) - grow, 0):int(np.ceil(y1)) + grow,
             max(int(x0) - grow, 0):int(np.ceil(x1)) + grow] = True
    return mask


def assert_boxes_hold_ink(lines, image):
    for x0, y0, x1, y1, text in lines:
        inside = image[int(y0):int(np.ceil(y1)), int(x0):int(np.ceil(x1))]
        # A glyph darkens at least a few pixels of its line; a box beside its text holds none.
        assert (inside < INK).sum() >= 3 * len(text.replace(" ", "")), (text, (x0, y0, x1, y1))


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return printed(tmp_path_factory.mktemp("plain"), decorated=False, seed=1)


def test_a_plain_print_has_its_ink_inside_its_line_boxes(plain):
    entry, image = plain
    assert entry["width"] == image.shape[1] and entry["height"] == image.shape[0]
    assert len(entry["lines"]) >= 30 and entry["make"] == "browser"
    assert_boxes_hold_ink(entry["lines"], image)
    ink = image < INK
    outside = (ink & ~box_mask(entry["lines"], ink.shape)).sum()
    assert outside <= 0.01 * ink.sum(), (outside, ink.sum())


def test_a_decorated_print_has_every_box_on_ink(tmp_path):
    entry, image = printed(tmp_path, decorated=True, seed=4)
    assert entry["recipe"]["box_rule"] != "none" or entry["recipe"]["table_rule"] != "none"
    assert_boxes_hold_ink(entry["lines"], image)


def test_a_typeset_pdf_has_its_ink_inside_its_line_boxes(tmp_path):
    rng = random.Random(2)
    lines = [sentence(rng, 8) for _ in range(20)]
    pdf = str(tmp_path / "typeset.pdf")
    write_text_pdf(pdf, lines, tiny_faces()[0])
    entry = page_material.MaterialWriter(str(tmp_path)).add(pdf, 1, DPI, "typeset", pdf)
    assert [line[4] for line in entry["lines"]] == lines
    image = np.asarray(Image.open(str(tmp_path / entry["image"])))
    assert_boxes_hold_ink(entry["lines"], image)
    ink = image < INK
    assert (ink & ~box_mask(entry["lines"], ink.shape)).sum() <= 0.01 * ink.sum()
    # The boxes are in the image's pixels: a box's height is the font's, 11 pt at DPI.
    heights = [y1 - y0 for _, y0, _, y1, _ in entry["lines"]]
    assert 11 * DPI / 72.0 <= min(heights) and max(heights) <= 1.5 * 11 * DPI / 72.0


def test_the_folder_reads_back_and_a_damaged_entry_is_named(plain, tmp_path):
    entry, _ = plain
    folder = tmp_path / "m"
    (folder / "pages").mkdir(parents=True)
    good = dict(entry, image="pages/000000.png")
    (folder / "pages.jsonl").write_text(json.dumps(good) + "\n" + '{"image": "x"}\n')
    read = page_material.read_material(str(folder))
    assert next(read)["lines"] == entry["lines"]
    with pytest.raises(ValueError, match=r"pages.jsonl line 2 is not a page entry"):
        next(read)
    with pytest.raises(ValueError, match="make it with scripts/make_page_material.py"):
        list(page_material.read_material(str(tmp_path / "none")))


def test_reserved_documents_are_kept_out():
    for path in ("/usr/share/doc/texlive-doc/german/l2kurz/l2kurz.pdf",
                 "/usr/share/doc/texlive-doc/latex/lshort-dutch/lshort-nl-1.3.pdf",
                 "/usr/share/doc/texlive-doc/finnish/lyhyt2e.pdf",
                 "/usr/share/doc/debian-faq/html/ch-basic.en.html",
                 "/usr/share/doc/maint-guide/html/index.fr.html",
                 "/usr/share/doc/installation-guide-amd64/de/ch01.html",
                 "/usr/share/doc/python-reportlab-doc/reportlab-userguide.pdf",
                 "/usr/share/doc/debian/FAQ/basic-defs.en.html",
                 "/usr/share/doc/debian/FAQ/zh-cn/index.zh-cn.html"):
        assert is_reserved_document(path), path
    assert not is_reserved_document("/usr/share/debian-reference/ch01.de.html")
    assert all(not is_reserved_document(p) for p in page_material.html_documents())


def test_a_style_without_faces_is_refused_in_one_line():
    with pytest.raises(ValueError, match="needs at least one printable face"):
        page_recipe(random.Random(0), [])


def test_crops_carry_their_lines_and_set_cut_lines_apart(tmp_path):
    rng = random.Random(3)
    pdf = str(tmp_path / "typeset.pdf")
    write_text_pdf(pdf, [sentence(rng, 8) for _ in range(30)], tiny_faces()[0])
    entry = page_material.MaterialWriter(str(tmp_path)).add(pdf, 1, DPI, "typeset", pdf)
    entry["image"] = str(tmp_path / entry["image"])
    crops = PageCrops([entry], 96, scales=(0.6, 1.0), seed=0)
    lines_seen = ignored_seen = 0
    for _ in range(30):
        image, lines, ignored = crops.crop()
        assert image.shape == (96, 96) and image.dtype == np.uint8
        for x0, y0, x1, y1 in lines + ignored:
            assert 0 <= x0 < x1 <= 96 and 0 <= y0 < y1 <= 96
        for x0, y0, x1, y1 in lines:
            # A whole line's height (11 pt at DPI, scaled by 0.6-1.0) and ink inside.
            assert 0.6 * 11 * DPI / 72.0 * page_crops.MIN_HEIGHT_SHARE <= y1 - y0
            assert (image[int(y0):int(np.ceil(y1)), int(x0):int(np.ceil(x1))] < INK).sum() > 0
        ink = image < INK
        outside = ink & ~box_mask([b + ("",) for b in lines + ignored], ink.shape)
        assert outside.sum() <= 0.01 * max(ink.sum(), 1)
        lines_seen += len(lines)
        ignored_seen += len(ignored)
    assert lines_seen > 30 and ignored_seen > 0


def test_validation_pages_are_whole_documents():
    entries = [dict(source="doc%d" % (i // 3), page=i % 3) for i in range(300)]
    training, validation = split_by_source(entries, validation_share=0.2)
    assert len(training) + len(validation) == 300 and 30 <= len(validation) <= 90
    assert not set(e["source"] for e in training) & set(e["source"] for e in validation)
    assert len(validation) % 3 == 0
    with pytest.raises(ValueError, match="make page material first"):
        PageCrops([], 64)


def test_generate_prints_draws_and_leaves_out_reserved_faces(tmp_path, monkeypatch):
    rng = random.Random(5)
    (tmp_path / "html").mkdir()
    (tmp_path / "pdf").mkdir()
    document(tmp_path / "html" / "doc.html")
    face = tiny_faces()[0]
    write_text_pdf(str(tmp_path / "pdf" / "ok.pdf"), [sentence(rng, 6) for _ in range(9)], face)
    # Named as a reserved family's face: the PDF may not be trained on, whatever it draws.
    (tmp_path / "reserved").mkdir()
    write_text_pdf(str(tmp_path / "reserved" / "named.pdf"), [sentence(rng, 6)], face,
                   font_name="LiberationSerif")
    folder, said = str(tmp_path / "material"), []
    kwargs = dict(faces=printable_faces(tiny_faces()), typeset_share=0.5, per_document=1,
                  html_roots=(str(tmp_path / "html"),), pdf_roots=(str(tmp_path / "pdf"),),
                  log=said.append)
    page_material.generate(folder, 4, seed=0, **kwargs)
    entries = list(page_material.read_material(folder))
    assert len(entries) == 4 and set(e["make"] for e in entries) == {"browser", "typeset"}
    assert all(e["source"].endswith(("doc.html", "ok.pdf")) for e in entries)
    assert all(96 <= e["dpi"] <= 200 and e["lines"] for e in entries)
    # A folder is continued: its pages kept, the numbering going on.
    page_material.generate(folder, 5, seed=1, **kwargs)
    entries = list(page_material.read_material(folder))
    assert [e["image"][-10:] for e in entries] == ["%06d.png" % i for i in range(5)]
    with pytest.raises(ValueError, match="no document left to print"):
        page_material.generate(str(tmp_path / "none"), 1, seed=0, **dict(
            kwargs, html_roots=(), pdf_roots=(str(tmp_path / "reserved"),)))
    assert said[-1].endswith("named.pdf: its fonts may not be trained on (font-maybe-reserved: "
                             "LiberationSerif)")
    monkeypatch.setattr(page_material, "CHROMIUM", "no-such-browser")
    with pytest.raises(ValueError, match="printing HTML needs no-such-browser: apt-get install"):
        page_material.generate(str(tmp_path / "other"), 1, seed=0, **kwargs)


def test_the_pieces_of_a_row_are_joined_and_rows_kept_apart():
    # A justified row cut in three (given out of order), the next row 12 px lower, and a
    # piece of a third row that overlaps it by less than ROW_OVERLAP of its height.
    pieces = [[10, 0, 40, 12, "wide"], [150, 0, 200, 12, "row"], [60, 1, 120, 12, "spaced"],
              [10, 12, 200, 24, "next row"], [10, 21, 90, 33, "third"]]
    assert page_material.join_rows(pieces) == [
        [10, 0, 200, 12, "wide spaced row"], [10, 12, 200, 24, "next row"],
        [10, 21, 90, 33, "third"]]


def test_rows_of_columns_side_by_side_are_lines_of_their_columns():
    """Chromium prints CSS columns as one text block whose rows run across the columns; a piece
    that starts where the pieces of other rows start is a column's edge, not a word gap. The
    lines come column after column; a justified row's inner pieces are still joined."""
    left = [[10, 14 * row, 90, 14 * row + 12, "left %d" % row] for row in range(4)]
    right = [[110, 14 * row, 180, 14 * row + 12, "right %d" % row] for row in range(3)]
    spaced = [[110, 42, 140, 54, "wide"], [165, 42, 190, 54, "gap"]]  # row 3's right half
    lines = page_material.join_rows(left + right + spaced)
    assert [line[4] for line in lines] == ["left 0", "left 1", "left 2", "left 3",
                                           "right 0", "right 1", "right 2", "wide gap"], lines
    assert lines[4][:4] == [110, 0, 180, 12]


def test_the_lines_of_a_print_in_three_columns_come_column_after_column(tmp_path):
    """poppler orders the blocks of CSS columns by height across the columns; with the print's
    recipe the lines come as a reader reads them: numbered paragraphs in their order."""
    rng = random.Random(3)
    source = tmp_path / "numbered.html"
    source.write_text("<html><body>%s</body></html>" % "".join(
        "<p>paragraph%02d %s</p>" % (number, sentence(rng, 12 + 9 * (number % 4)))
        for number in range(40)))
    recipe = page_recipe(random.Random(5), printable_faces(tiny_faces()), decorated=False)
    recipe.update(columns=3, size_pt=9.0, leading=1.3, paper="A4", margin_mm=12)
    pdf = str(tmp_path / "print.pdf")
    page_material.print_html(str(source), recipe_css(recipe), pdf)
    lines = page_material.line_boxes(pdf, 1, DPI, recipe)
    numbers = [int(word[9:11]) for line in lines for word in line[4].split()
               if word.startswith("paragraph")]
    assert len(numbers) >= 6 and numbers == sorted(numbers), numbers
    columns = [page_style.column_of(line[0], recipe, 210 / 25.4 * DPI) for line in lines]
    assert columns == sorted(columns) and set(columns) == {0, 1, 2}


def test_the_cells_of_a_row_in_a_column_read_left_to_right():
    # A table row whose right cell sits half a pixel higher (vertical alignment), the next row
    # below it, and a line of the second column given first.
    lines = [[300, 0, 380, 12, "second column"], [150, 10.5, 200, 22.5, "right"],
             [10, 11, 90, 23, "left"], [10, 24, 90, 36, "next"]]
    ordered = page_material.in_column_order(lines, lambda line: int(line[0] >= 250))
    assert [line[4] for line in ordered] == ["left", "right", "next", "second column"]
