"""Seeded page styles for browser prints: a recipe (a plain dict, recorded with each page) and
the CSS that applies it over a document's own styles.

A recipe chooses the paper and its margins, the faces (body, headings, code: font files given,
loaded with ``@font-face`` so the print embeds exactly that face), the body size and leading,
one to three columns, how headings, tables, code and note boxes, separators and navigation bars
look (rules solid, dashed, dotted or double; grey shades; tinted paper), the text's grey and its
alignment. What a page reader must cope with in prints of every make (issue 51): rules and
shaded boxes that are not text, several sizes and columns on one page.

Images are hidden: a picture's text (a screenshot, a diagram) has no line in the text layer, and
a learned detector would be taught that such text is background.
"""
import os

__all__ = ["page_recipe", "recipe_css", "printable_faces"]

PAPERS = ("A4", "Letter", "A5")
PAPER_WIDTH_MM = {"A4": 210.0, "Letter": 215.9, "A5": 148.0}
COLUMN_GAP_MM = 6
BODY_PADDING_MM = 2
RULES = ("solid", "dashed", "dotted", "double")
# Font files Chromium loads through @font-face (not .pfb, nor one face of a collection).
PRINTABLE = (".ttf", ".otf", ".woff")


def printable_faces(fonts):
    """The faces of ``fonts`` (paths, e.g. from ``datasets.fonts.select_fonts``) that a print
    can load by file."""
    return [path for path in fonts if path.lower().endswith(PRINTABLE) and "#" not in path]


def page_recipe(rng, faces, decorated=True):
    """A page style drawn with ``rng`` (a ``random.Random``) from the font files ``faces``;
    ``decorated=False`` gives a style without rules, shades or tints (plain text on white)."""
    if not faces:
        raise ValueError("a page style needs at least one printable face (.ttf, .otf, .woff); "
                         "install the training fonts (scripts/install_system_packages.sh)")

    def rule():
        return rng.choice(RULES + ("none",)) if decorated else "none"

    def shade(low):
        return rng.randint(low, 250) if decorated and rng.random() < 0.6 else 255

    return dict(
        paper=rng.choice(PAPERS), margin_mm=rng.randint(6, 30),
        body_face=rng.choice(faces), heading_face=rng.choice(faces), mono_face=rng.choice(faces),
        size_pt=round(rng.uniform(7.0, 14.0), 1), leading=round(rng.uniform(1.05, 1.7), 2),
        columns=rng.choice((1, 1, 1, 2, 2, 3)), column_rule=rule(),
        text_grey=rng.choice((0, 0, 0, 30, 60, 90)), paper_grey=shade(236),
        align=rng.choice(("left", "justify")), heading_scale=round(rng.uniform(1.15, 2.4), 2),
        heading_rule=rule(), heading_shade=shade(215), box_rule=rule(), box_shade=shade(215),
        table_rule=rule(), table_head_shade=shade(200), separator=rule(),
        page_border=rng.choice(("none", "none", "solid", "double")) if decorated else "none",
        nav_grey=rng.choice((0, 90, 120, 150)))


def column_of(x, recipe, page_width):
    """The column (0 for the leftmost) of a print of ``recipe`` in which a line that starts at
    ``x`` lies, ``x`` and ``page_width`` in one unit (points or pixels): the page's text width
    between its margins is split into the recipe's columns and gaps, every element of the page
    flowing through them (no heading spans the columns)."""
    scale = page_width / PAPER_WIDTH_MM[recipe["paper"]]
    left, gap = (recipe["margin_mm"] + BODY_PADDING_MM) * scale, COLUMN_GAP_MM * scale
    pitch = (page_width - 2 * left + gap) / recipe["columns"]
    # Columns part in the middles of their gaps: a line starts a column's width past it.
    return min(recipe["columns"] - 1, max(0, int((x - left + gap / 2) // pitch)))


def _grey(level):
    return "rgb(%d,%d,%d)" % (level, level, level)


def _face(name, path):
    return "@font-face { font-family: %s; src: url('file://%s'); }\n" % (
        name, os.path.abspath(path).replace("'", "%27"))


def _border(style, width="1px"):
    return "none" if style == "none" else "%s %s %s" % ("3px" if style == "double" else width,
                                                        style, _grey(90))


def recipe_css(recipe):
    """The CSS of ``recipe`` (see ``page_recipe``), every rule ``!important`` so that it wins
    over the document's own stylesheet."""
    r = recipe
    rules = {
        "html, body": dict(background=_grey(r["paper_grey"]), color=_grey(r["text_grey"])),
        # Every element in the recipe's faces; DejaVu (a training face) for what they lack,
        # never a system default that may be a reserved face.
        "*": {"font-family": "rb, 'DejaVu Sans'"},
        "body": {"font-size": "%spt" % r["size_pt"],
                 "line-height": str(r["leading"]), "text-align": r["align"],
                 "column-count": str(r["columns"]), "column-gap": "%dmm" % COLUMN_GAP_MM,
                 "column-rule": _border(r["column_rule"]), "border": _border(r["page_border"]),
                 "padding": "%dmm" % BODY_PADDING_MM, "margin": "0", "max-width": "none"},
        "h1, h2, h3, h4, h5, h6, .title": {
            "font-family": "rh, 'DejaVu Sans'", "border-bottom": _border(r["heading_rule"]),
            "background": _grey(r["heading_shade"]), "column-span": "none"},
        "h1": {"font-size": "%.2fem" % r["heading_scale"]},
        "h2": {"font-size": "%.2fem" % max(1.0, r["heading_scale"] * 0.8)},
        "h3": {"font-size": "%.2fem" % max(1.0, r["heading_scale"] * 0.65)},
        "pre, code, tt, kbd, samp, .screen, .programlisting": {
            "font-family": "rm, 'DejaVu Sans Mono'"},
        "pre": {"white-space": "pre-wrap"},
        "pre, .screen, .programlisting, .note, .tip, .warning, .caution, .important, "
        "blockquote, .admonition, div.highlight": {
            "background": _grey(r["box_shade"]), "border": _border(r["box_rule"])},
        # Fixed layout and breaks anywhere: a wide table or code line stays inside its column
        # (text cut off at the paper's edge would still be a whole line in the text layer).
        "table": {"border-collapse": "collapse", "border": _border(r["table_rule"]),
                  "table-layout": "fixed", "width": "100%"},
        "td, th": {"border": _border(r["table_rule"]), "padding": "1px 4px"},
        "td, th, pre, code, a": {"overflow-wrap": "anywhere"},
        "th": {"background": _grey(r["table_head_shade"])},
        "hr": {"border": "none", "border-top": _border(r["separator"], "2px")},
        ".navheader, .navfooter, .related, .sphinxsidebar, .footer, header, footer, nav": {
            "color": _grey(r["nav_grey"])},
        "img, svg, object, embed, video, canvas, iframe, input, button, select, textarea": {
            "display": "none"},
    }
    css = [_face("rb", r["body_face"]), _face("rh", r["heading_face"]),
           _face("rm", r["mono_face"]),
           "@page { size: %s; margin: %dmm; }\n" % (r["paper"], r["margin_mm"])]
    for selector, properties in rules.items():
        css.append("%s { %s }\n" % (selector, " ".join(
            "%s: %s !important;" % item for item in properties.items())))
    return "".join(css)
