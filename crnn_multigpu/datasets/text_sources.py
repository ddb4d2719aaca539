"""Where the text of a language's synthetic lines comes from: one class per kind of source.

A language description (``languages/*.json``) names its sources as ``{"source": KIND, ...}``;
:func:`make_source` builds the registered class of that kind with the other keys as
arguments. Every source has one hook, ``text()``: the source's running text, paragraphs
separated by blank lines. Sources read what a Debian machine has; a source whose files are
all missing gives no text (the language then says which sources it found nothing in).
"""
import glob
import gzip
import html.parser
import io
import os
import re
import struct
import subprocess
import unicodedata

SOURCES = {}
# Documents the project keeps for its independent checks, never read as training text: the
# PDFs of libtasn1-doc, shared-mime-info and python-reportlab-doc, ctex-faq, every translation of
# lshort (lshort-* folders and files, l2kurz, lyhyt2e), the text of manpages-zh and Debian's
# debian-faq, maint-guide and installation-guide in every language.
RESERVED_PDFS = ("libtasn1.pdf", "shared-mime-info-spec.pdf", "reportlab-userguide.pdf",
                 "lshort-zh-cn.pdf", "ctex-faq.pdf", "l2kurz.pdf", "lyhyt2e.pdf")
# Debian's FAQ keeps its pages in /usr/share/doc/debian/FAQ, a folder not named for it.
RESERVED_PATH_RE = re.compile(
    r"(^|/)([^/]*lshort[^/]*|libtasn1-doc|shared-mime-info|python-reportlab-doc|debian-faq[^/]*|"
    r"maint-guide[^/]*|installation-guide[^/]*|manpages-zh[^/]*|ctex-faq[^/]*)(/|$)|"
    r"/man/zh_(CN|TW)/|/doc/debian/FAQ(/|$)", re.I)


def is_reserved_document(path):
    """True for a file of the documents reserved for the project's independent checks."""
    path = os.path.abspath(path)
    return os.path.basename(path) in RESERVED_PDFS or bool(RESERVED_PATH_RE.search(path))


def register(cls):
    """Class decorator: make ``cls`` the source of kind ``cls.kind``."""
    SOURCES[cls.kind] = cls
    return cls


def make_source(spec):
    """The source a description's ``{"source": KIND, ...}`` entry describes."""
    settings = dict(spec)
    kind = settings.pop("source", None)
    if kind not in SOURCES:
        raise ValueError("unknown text source %r; known: %s" % (kind, ", ".join(sorted(SOURCES))))
    return SOURCES[kind](**settings)


def expand(patterns):
    """The existing files matching ``patterns`` (globs), sorted, each once; reserved documents
    (:func:`is_reserved_document`) are left out."""
    found = set()
    for pattern in patterns:
        found.update(path for path in glob.glob(os.path.expanduser(pattern))
                     if os.path.isfile(path) and not is_reserved_document(path))
    return sorted(found)


def read_utf8(path):
    """The text of a UTF-8 file, or ValueError naming the file."""
    try:
        with io.open(path, "r", encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as error:
        raise ValueError("text file %s is not UTF-8 (byte %d): %s; save it as UTF-8"
                         % (path, error.start, error.reason))


class TextSource(object):
    """A source of running text; subclasses set ``kind`` and implement ``text()``."""
    kind = None

    def __init__(self, paths=()):
        self.paths = list(paths)

    def describe(self):
        """Where the text comes from, for messages."""
        return "%s %s" % (self.kind, ", ".join(self.paths)) if self.paths else self.kind

    def text(self):
        raise NotImplementedError


@register
class PythonDocs(TextSource):
    """The Python reference manual as plain text (``pydoc_data.topics``, in every CPython)."""
    kind = "pydoc"

    def text(self):
        try:
            from pydoc_data import topics
        except ImportError:  # a Python built without its documentation topics
            return ""
        return "\n\n".join(topics.topics[key] for key in sorted(topics.topics))


@register
class TextFiles(TextSource):
    """UTF-8 text files (globs); a folder's files are read once even through links."""
    kind = "files"

    def text(self):
        seen, parts = set(), []
        for path in expand(self.paths):
            real = os.path.realpath(path)
            if real not in seen:  # GPL -> GPL-3: read once
                seen.add(real)
                parts.append(read_utf8(real))
        return "\n\n".join(parts)


class _Paragraphs(html.parser.HTMLParser):
    """The text of an HTML page, one paragraph per block element, scripts and styles left out."""
    BLOCKS = {"p", "div", "li", "pre", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "dt",
              "dd", "tr", "br", "title", "table", "blockquote"}

    def __init__(self):
        html.parser.HTMLParser.__init__(self, convert_charrefs=True)
        self.parts, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


@register
class HtmlPages(TextSource):
    """The text of HTML pages (globs), one paragraph per block element."""
    kind = "html"

    def text(self):
        return "\n\n".join(html_text(read_utf8(path)) for path in expand(self.paths))


@register
class PdfTextLayers(TextSource):
    """The text layers of PDFs (globs), as poppler's ``pdftotext`` extracts them; the project's
    reserved PDFs are never read. Chinese PDFs need Debian's ``poppler-data``."""
    kind = "pdf_text"

    def text(self):
        parts = []
        for path in expand(self.paths):
            try:
                result = subprocess.run(["pdftotext", "-enc", "UTF-8", path, "-"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            except OSError:  # no poppler: the source has no text
                return ""
            if result.returncode == 0:
                # A page break ends a paragraph; lines within one are joined by the language.
                parts.append(result.stdout.decode("utf-8", "replace").replace("\f", "\n\n"))
        return "\n\n".join(parts)


@register
class GettextCatalogs(TextSource):
    """The translated messages of compiled gettext catalogues (``.mo`` globs, e.g. a locale's
    ``/usr/share/locale/zh_CN/LC_MESSAGES/*.mo``): programs' help texts, options and errors,
    the language of manuals. Each line of a message is a paragraph; a printf directive
    becomes what a reader would see in its place (``%s``: FILE, ``%d``: 3), and a menu
    label's keyboard mnemonic mark is dropped (:func:`without_mnemonic`)."""
    kind = "gettext"

    def text(self):
        lines = []
        for path in expand(self.paths):
            for message in catalog_messages(path):
                message = without_mnemonic(message)
                lines.extend(PRINTF_DIRECTIVE.sub(_placeholder, line)
                             for line in message.splitlines())
        return "\n\n".join(line for line in lines if line.strip())


@register
class ManualPages(TextSource):
    """The running text of manual pages (globs of roff sources, gzipped or not, e.g. a
    language's ``/usr/share/man/de/man1/*.gz``): the words of their paragraphs, headings and
    emphasis, their requests and font switches left out, their named characters written."""
    kind = "man"

    def text(self):
        parts = []
        for path in expand(self.paths):
            opener = gzip.open if path.endswith(".gz") else open
            try:
                with opener(path, "rb") as handle:
                    parts.append(roff_text(handle.read().decode("utf-8")))
            except (OSError, UnicodeDecodeError, EOFError):
                continue  # a damaged page or one in a legacy encoding: its words are not read
        return "\n\n".join(parts)


# Requests whose arguments are text (headings, font alternations); other requests are layout.
ROFF_TEXT_REQUESTS = {"SH", "SS", "B", "I", "BR", "RB", "IR", "RI", "BI", "IB", "SM", "SB"}
ROFF_CHARACTERS = {"em": u"\u2014", "en": u"\u2013", "aq": "'", "dq": '"', "lq": u"\u201c",
                   "rq": u"\u201d", "oq": u"\u2018", "cq": u"\u2019", "bu": u"\u2022",
                   "co": u"\u00a9", "rg": u"\u00ae", "hy": "-", "mi": "-", "ti": "~", "ha": "^",
                   "rs": "\\", "Fo": u"\u00ab", "Fc": u"\u00bb", "fo": u"\u2039", "fc": u"\u203a",
                   "de": u"\u00b0", "mu": u"\u00d7", "pc": u"\u00b7", "tm": u"\u2122",
                   "ss": u"\u00df", "ae": u"\u00e6", "AE": u"\u00c6", "/o": u"\u00f8",
                   "/O": u"\u00d8", "oe": u"\u0153", "OE": u"\u0152", "Eu": u"\u20ac",
                   "eu": u"\u20ac"}
ROFF_ESCAPE = re.compile(r"\\(\(..|\[[^\]]*\]|f(\(..|\[[^\]]*\]|.)|\*(\(..|\[[^\]]*\]|.)|"
                         r"s[-+]?\d+|[-e&c ~|^0%,/])")


# groff's accented letters: a mark then the letter (\\(:u is u with a diaeresis).
ROFF_MARKS = {":": u"\u0308", "'": u"\u0301", "`": u"\u0300", "^": u"\u0302", "~": u"\u0303",
              ",": u"\u0327", "o": u"\u030a"}


def _roff_character(name):
    """The character groff's ``\\(xx`` / ``\\[name]`` names, or "" for one not known here."""
    if name in ROFF_CHARACTERS:
        return ROFF_CHARACTERS[name]
    if len(name) == 2 and name[0] in ROFF_MARKS and name[1].isalpha():
        return unicodedata.normalize("NFC", name[1] + ROFF_MARKS[name[0]])
    return ""


def _roff_escape(match):
    escape = match.group(1)
    if escape[0] in "([":
        return _roff_character(escape[1:3] if escape[0] == "(" else escape[1:-1])
    return {"-": "-", "e": "\\", " ": " ", "~": " ", "0": " "}.get(escape, "")


def roff_text(source):
    """The running text of a roff manual page: a paragraph per ``.PP``/``.TP``/``.SH``..."""
    lines = []
    for line in source.splitlines():
        if line.startswith((".", "'")):
            request, _, rest = line[1:].strip().partition(" ")
            if request in ROFF_TEXT_REQUESTS and rest:
                words = [quoted or bare for quoted, bare in re.findall(r'"([^"]*)"|(\S+)', rest)]
                # B, I, SH...: words; BR, IR...: fonts alternate between words set close.
                joined = " ".join(words) if len(request) == 1 or request in ("SH", "SS", "SM", "SB") \
                    else "".join(words)
                heading = request in ("SH", "SS")
                lines.extend(([""] if heading else []) + [ROFF_ESCAPE.sub(_roff_escape, joined)] +
                             ([""] if heading else []))
            else:
                lines.append("")  # a layout request ends the paragraph
            continue
        lines.append(ROFF_ESCAPE.sub(_roff_escape, line))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


PRINTF_DIRECTIVE = re.compile(r"%(\d+\$)?[-+ #0']*(\d+|\*)?(\.(\d+|\*))?"
                              r"(hh|h|ll|l|j|z|t|L|q|I64)?([diouxXeEfFgGaAcsSpm%])")
# What a reader sees in place of a directive, by its conversion letter.
PLACEHOLDERS = dict([(letter, "3") for letter in "diouxXeEfFgGaA"] +
                    [("c", "x"), ("s", "FILE"), ("S", "FILE"), ("m", "FILE"), ("p", "0x7f"),
                     ("%", "%")])
MO_MAGIC = 0x950412de
# A word holding one of these is code, not a label: its _ or & is part of it.
IDENTIFIER_SIGNS = re.compile(r"[-0-9$./=;:<>()\[\]{}]")


def without_mnemonic(message):
    """``message`` without its keyboard mnemonic mark (GTK's ``_``, Qt's ``&``: ``_Open``,
    ``Mạ_ng``, ``Save &As``), which no printed text shows. The mark is the message's only
    ``_`` or ``&``, before a letter, in a word that is not an identifier (``LC_ALL``,
    ``--no_check``, ``x_1``)."""
    for mark in "_&":
        if message.count(mark) != 1:
            continue
        at = message.index(mark)
        start = message.rfind(" ", 0, at) + 1
        end = message.find(" ", at)
        word = message[start:len(message) if end < 0 else end]
        before, after = message[at - 1:at], message[at + 1:at + 2]
        if after.isalpha() and not (before.isupper() and after.isupper()) and \
                not IDENTIFIER_SIGNS.search(word):
            return message[:at] + message[at + 1:]
    return message


def _placeholder(directive):
    return PLACEHOLDERS[directive.group(6)]


def catalog_messages(path):
    """The translations a ``.mo`` file holds (each plural form apart; the header left out), or
    [] when the file is not a readable UTF-8 catalogue."""
    with open(path, "rb") as handle:
        data = handle.read()
    order = next((order for order in "<>" if len(data) >= 20 and
                  struct.unpack(order + "I", data[:4])[0] == MO_MAGIC), None)
    if order is None:
        return []
    count, originals, translations = struct.unpack(order + "3I", data[8:20])
    messages = []
    for index in range(count):
        try:
            original = struct.unpack_from(order + "2I", data, originals + 8 * index)
            length, offset = struct.unpack_from(order + "2I", data, translations + 8 * index)
        except struct.error:  # a truncated catalogue: what was read
            break
        if original[0] == 0:  # the empty msgid: the catalogue's header
            continue
        text = data[offset:offset + length].decode("utf-8", "replace")
        messages.extend(form for form in text.split("\0") if form)
    return messages


def html_text(markup):
    """The paragraphs of an HTML string (what :class:`HtmlPages` reads from a file)."""
    parser = _Paragraphs()
    parser.feed(markup)
    return re.sub(r"\n{3,}", "\n\n", "".join(parser.parts))
