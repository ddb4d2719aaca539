"""Names are data: how the name of an input (a file name as the shell handed it over, which may
hold a TAB, a newline or bytes that are not UTF-8) is written in each output format, so that
every output stays parseable and the name can be recovered exactly.

- **text** (``path<TAB>text`` lines, ``skipped: NAME: reason`` lines on stderr) and **hOCR**
  (the ``image "NAME"`` of an ``ocr_page``): :func:`escaped`, a backslash escaping. ``\\`` is
  written ``\\\\``, TAB ``\\t``, newline ``\\n``, carriage return ``\\r``, any other control
  character ``\\xNN``, and a byte of the name that is not UTF-8 ``\\xNN`` (its value; Python
  hands such a byte over as the surrogate U+DCNN, ``os.fsdecode``). hOCR also writes ``"`` as
  ``\\"`` (the property's quotes) and then escapes the result for XML. An escaped name holds no
  TAB, newline or control character, and is valid UTF-8: :func:`unescaped` gives the file
  name's bytes back.
- **JSON**: the name is a JSON string (JSON escapes TAB, newline and control characters
  itself); a byte that is not UTF-8 is written as the JSON escape of its surrogate,
  ``\\udcNN``, so the line is valid UTF-8: Python's ``json.loads`` then ``os.fsencode`` give the
  file name's bytes back (:func:`json_line`).
"""
import json
import re

SHORT = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
# surrogateescape maps a byte 0x80-0xff that is not UTF-8 to U+DC80-U+DCFF.
ESCAPED_BYTES = range(0xDC80, 0xDD00)
SURROGATE = re.compile(u"[\ud800-\udfff]")
ESCAPE = re.compile(r"\\(\\|t|n|r|\"|x[0-9a-f]{2})")


def escaped(name, quote=False):
    """``name`` as the text and hOCR outputs write it (module docstring); ``quote`` also escapes
    ``"`` (hOCR's quoted property)."""
    out = []
    for char in name:
        code = ord(char)
        if char in SHORT:
            out.append(SHORT[char])
        elif quote and char == '"':
            out.append('\\"')
        elif code < 0x20 or code == 0x7f:
            out.append("\\x%02x" % code)
        elif code in ESCAPED_BYTES:
            out.append("\\x%02x" % (code - 0xDC00))
        elif 0xD800 <= code <= 0xDFFF:  # a lone surrogate that is no byte: its code point
            out.append("\\u%04x" % code)
        else:
            out.append(char)
    return "".join(out)


def unescaped(text):
    """The bytes of the file name that :func:`escaped` wrote as ``text``."""
    parts, position = [], 0
    for found in ESCAPE.finditer(text):
        parts.append(text[position:found.start()].encode("utf-8"))
        code = found.group(1)
        parts.append(bytes([int(code[1:], 16)]) if code.startswith("x") else
                     {"\\": b"\\", "t": b"\t", "n": b"\n", "r": b"\r", '"': b'"'}[code])
        position = found.end()
    parts.append(text[position:].encode("utf-8"))
    return b"".join(parts)


def json_line(value):
    """``value`` as one line of JSON, UTF-8 safe: non-ASCII text as itself, a lone surrogate
    (a byte of a file name that is not UTF-8) as its ``\\uDCNN`` escape."""
    text = json.dumps(value, ensure_ascii=False)
    return SURROGATE.sub(lambda found: "\\u%04x" % ord(found.group()), text)
