"""How a face is named: a font file's path, or ``file.ttc#N`` for face N of a collection.

Collections (``.ttc``/``.otc``) hold several faces in one file; Noto CJK's hold the Japanese,
Korean, Simplified and Traditional Chinese faces of one design, which differ in glyph shapes.
"""
import re

COLLECTION_EXTENSIONS = (".ttc", ".otc")
_FACE_OF_COLLECTION = re.compile(r"^(.*\.(?:ttc|otc))#(\d+)$", re.I)


def face_file(face):
    """``(file, index)`` of a face name: ``("x.ttf", 0)``, ``("x.ttc", 2)`` for ``x.ttc#2``."""
    match = _FACE_OF_COLLECTION.match(face)
    return (match.group(1), int(match.group(2))) if match else (face, 0)


def collection_face(file, index):
    """The name of face ``index`` of the collection ``file``."""
    return "%s#%d" % (file, index)
