"""The font of a searchable PDF's invisible text: glyphless, so that it takes any character.

One Type0 font, Identity-H (two-byte codes, each a CID), over a CIDFontType2 that embeds a
TrueType face of two empty glyphs (:func:`glyphless_truetype`, made here from the TrueType
specification's tables); every CID maps to the empty glyph, and every advance is half an em.
The ToUnicode CMap maps each CID back to its character in UTF-16 (characters beyond the BMP as
surrogate pairs), so any Unicode text maps back. The font is named ``GlyphLessFont`` as
Tesseract's is: tools that look for an OCR text layer know it by that name.
"""
import struct
import zlib

FONT_NAME = "GlyphLessFont"
# The glyphs' metrics, in thousandths of the font size: the advance of every character, and
# how far the box reaches above and below the baseline (together one font size, so a word
# drawn at the box's height fills it from top to bottom).
ADVANCE = 500
ASCENT = 800
DESCENT = -200
BFCHAR_BLOCK = 100  # a CMap's beginbfchar section holds at most 100 entries


def write_font(pdf, font, characters):
    """Write the Type0 font of object number ``font`` into ``pdf`` (a
    :mod:`~crnn_multigpu.ocr.searchable_pdf` writer: ``reserve()``, ``write(number, body,
    data)``), mapping the CIDs of ``characters`` (character -> CID) back to their characters."""
    cid_font, descriptor, face, to_unicode, cid_to_gid = [pdf.reserve() for _ in range(5)]
    pdf.write(font, "<< /Type /Font /Subtype /Type0 /BaseFont /%s /Encoding /Identity-H "
              "/DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>" % (FONT_NAME, cid_font, to_unicode))
    pdf.write(cid_font, "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /%s /CIDSystemInfo "
              "<< /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor %d 0 R "
              "/DW %d /CIDToGIDMap %d 0 R >>" % (FONT_NAME, descriptor, ADVANCE, cid_to_gid))
    pdf.write(descriptor, "<< /Type /FontDescriptor /FontName /%s /Flags 5 /FontBBox [0 %d %d "
              "%d] /ItalicAngle 0 /Ascent %d /Descent %d /CapHeight %d /StemV 80 /FontFile2 %d "
              "0 R >>" % (FONT_NAME, DESCENT, ADVANCE, ASCENT, ASCENT, DESCENT, ASCENT, face))
    truetype = glyphless_truetype()
    pdf.write(face, "<< /Length1 %d /Filter /FlateDecode >>" % len(truetype),
              zlib.compress(truetype))
    # CID 0 is .notdef (glyph 0); every other CID shows the empty glyph 1
    pdf.write(cid_to_gid, "<< /Filter /FlateDecode >>",
              zlib.compress(b"\0\0" + b"\0\1" * len(characters)))
    pdf.write(to_unicode, "<< /Filter /FlateDecode >>",
              zlib.compress(_to_unicode_cmap(characters).encode("ascii")))


def _to_unicode_cmap(characters):
    """The ToUnicode CMap mapping each CID of ``characters`` (character -> CID) to the
    character in UTF-16BE."""
    entries = ["<%04X> <%s>" % (cid, character.encode("utf-16-be").hex().upper())
               for character, cid in sorted(characters.items(), key=lambda item: item[1])]
    sections = ["%d beginbfchar\n%s\nendbfchar" % (len(block), "\n".join(block))
                for block in (entries[at:at + BFCHAR_BLOCK]
                              for at in range(0, len(entries), BFCHAR_BLOCK))]
    return ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
            "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
            "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n%s\n"
            "endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
            % "\n".join(sections))


def glyphless_truetype():
    """The bytes of a TrueType face with two glyphs, ``.notdef`` and one without an outline,
    each ``ADVANCE`` wide in 1000 units per em: the tables a PDF's CIDFontType2 needs (glyf,
    head, hhea, hmtx, loca, maxp)."""
    tables = {
        b"glyf": b"",  # both glyphs are empty: their loca offsets are equal
        b"head": struct.pack(">IIIIHHqqhhhhHHhhh", 0x10000, 0x10000, 0, 0x5F0F3CF5, 0x000B, 1000,
                             0, 0, 0, DESCENT, ADVANCE, ASCENT, 0, 8, 2, 0, 0),
        b"hhea": struct.pack(">IhhhHhhhhhhhhhhhH", 0x10000, ASCENT, DESCENT, 0, ADVANCE, 0, 0,
                             ADVANCE, 1, 0, 0, 0, 0, 0, 0, 0, 2),
        b"hmtx": struct.pack(">HhHh", ADVANCE, 0, ADVANCE, 0),
        b"loca": struct.pack(">HHH", 0, 0, 0),
        b"maxp": struct.pack(">IHHHHHHHHHHHHHH", 0x10000, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0),
    }
    count = len(tables)
    power = 1 << (count.bit_length() - 1)
    header = struct.pack(">IHHHH", 0x10000, count, power * 16, power.bit_length() - 1,
                         (count - power) * 16)
    directory, body = b"", b""
    offset = len(header) + 16 * count
    for tag in sorted(tables):
        data = tables[tag]
        directory += struct.pack(">4sIII", tag, _checksum(data), offset + len(body), len(data))
        body += data + b"\0" * (-len(data) % 4)
    font = header + directory + body
    # head.checkSumAdjustment makes the whole file sum to the magic number
    adjustment = (0xB1B0AFBA - _checksum(font)) & 0xFFFFFFFF
    at = offset + sum(len(tables[tag]) + (-len(tables[tag]) % 4)
                      for tag in sorted(tables) if tag < b"head") + 8
    return font[:at] + struct.pack(">I", adjustment) + font[at + 4:]


def _checksum(data):
    data += b"\0" * (-len(data) % 4)
    return sum(struct.unpack(">%dI" % (len(data) // 4), data)) & 0xFFFFFFFF
