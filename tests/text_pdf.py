"""Write a one-page PDF of text lines in an embedded TrueType font, with a real text layer.

Used by test_page.py and test_pdf_words.py.

The tests need a PDF they made themselves (so they know every word on it) that poppler reads
like any typeset document: rasterised by ``pdftoppm``, text extracted by ``pdftotext``. No PDF
library is a dependency of the project, so this writes the few objects such a page needs.
"""
from PIL import ImageFont

POINTS_PER_INCH = 72


def _escape(text):
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_text_pdf(path, lines, font_path, size=11.0, leading=1.45, page=(612, 792), margin=72,
                   font_name="Embedded", embed=True):
    """Write ``lines`` (ASCII strings; None for a blank line) top-down on a US-letter page.

    ``size`` is the font size in points; ``leading`` the line pitch as a multiple of it.
    ``font_name`` is the PostScript name the PDF gives the font; ``embed=False`` leaves the
    font file out (a reader then substitutes a face of its own).
    """
    em = ImageFont.truetype(font_path, 1000)  # advances at 1000 units per em, PDF's unit
    widths = " ".join("%d" % round(em.getlength(chr(code))) for code in range(32, 127))
    ascent, descent = em.getmetrics()
    y, commands = page[1] - margin - size, []
    for line in lines:
        if line is not None:
            commands.append("BT /F1 %.2f Tf %d %.2f Td (%s) Tj ET" % (size, margin, y,
                                                                    _escape(line)))
        y -= size * leading
    content = "\n".join(commands).encode("latin-1")
    with open(font_path, "rb") as handle:
        font_file = handle.read()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        ("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R "
         "/Resources << /Font << /F1 5 0 R >> >> >>" % page).encode("ascii"),
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        ("<< /Type /Font /Subtype /TrueType /BaseFont /%s /FirstChar 32 /LastChar 126 "
         "/Widths [%s] /Encoding /WinAnsiEncoding /FontDescriptor 6 0 R >>" % (font_name, widths))
        .encode("ascii"),
        # Flags 32: non-symbolic, so poppler maps WinAnsi codes through the font's Unicode cmap.
        ("<< /Type /FontDescriptor /FontName /%s /Flags 32 /FontBBox [-1000 %d 2000 %d] "
         "/ItalicAngle 0 /Ascent %d /Descent %d /CapHeight %d /StemV 80%s >>"
         % (font_name, -descent, ascent, ascent, -descent, int(0.7 * ascent),
            " /FontFile2 7 0 R" if embed else "")).encode("ascii"),
        b"<< /Length %d /Length1 %d >>\nstream\n" % (len(font_file), len(font_file)) +
        font_file + b"\nendstream",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1,
                                                                                xref)
    with open(path, "wb") as handle:
        handle.write(bytes(out))
