"""How a page looks when it reaches a reader: as drawn, scanned on a flatbed, or photographed.

A look is one class with one hook, :meth:`PageLook.draw`, registered once in :data:`LOOKS` by
its name: it takes a page as drawn (mode L) and a ``numpy`` RandomState and gives a
:class:`Looked` page: the image and the homography that carries a point of the drawn page to
the image, so that a line's box drawn on the page can be followed onto the look (a text
detector's material) while its text stays the truth (a reader's check).

* ``clean``: the page as drawn;
* ``scan``: a flatbed scanner's copy: turned by up to half a degree, a little blurred, grey
  paper shaded unevenly, sensor noise;
* ``photo``: a phone's photo of a page on a table: the page seen at a slant (each corner moved
  in by up to :data:`PHOTO_SLANT` of the page's side), a darker table around it, light falling
  off across the page and towards its edges, out of focus, smaller, noisy and saved as JPEG.
"""
import collections
import io

import numpy as np
from PIL import Image, ImageFilter

__all__ = ["LOOKS", "Looked", "PageLook", "look_of", "map_points", "homography_between"]

LOOKS = collections.OrderedDict()
# A photo's page corners move inwards by up to this share of the page's width or height.
PHOTO_SLANT = 0.07

Looked = collections.namedtuple("Looked", "image homography")
Looked.__doc__ = """A page in a look: ``image`` (mode L) and ``homography``, the 3x3 matrix that
carries a point ``(x, y, 1)`` of the page as drawn to the image (:func:`map_points`)."""


def register(cls):
    """Class decorator: the look ``cls`` under its ``name`` in :data:`LOOKS`."""
    LOOKS[cls.name] = cls
    return cls


def look_of(name):
    """The registered look called ``name``; ValueError naming the looks there are."""
    if name not in LOOKS:
        raise ValueError("unknown page look %r; the looks are %s" % (name, ", ".join(LOOKS)))
    return LOOKS[name]()


def map_points(homography, points):
    """``points`` (rows of x, y) carried by ``homography``, as an array of rows of x, y."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    mapped = np.hstack([points, np.ones((len(points), 1))]).dot(np.asarray(homography).T)
    return mapped[:, :2] / mapped[:, 2:3]


class PageLook(object):
    """A look: ``name`` and :meth:`draw`."""

    name = None

    def draw(self, page, rng):
        """The :class:`Looked` of ``page`` (a PIL image, any mode) drawn with ``rng``."""
        raise NotImplementedError


@register
class Clean(PageLook):
    """The page as drawn."""

    name = "clean"

    def draw(self, page, rng):
        return Looked(page.convert("L"), np.eye(3))


@register
class Scan(PageLook):
    """A flatbed scanner's copy (the module docstring)."""

    name = "scan"
    max_turn = 0.5  # degrees

    def draw(self, page, rng):
        image = page.convert("L")
        angle = rng.uniform(-self.max_turn, self.max_turn)
        image = image.rotate(angle, resample=Image.BICUBIC, expand=False, fillcolor=255)
        image = image.filter(ImageFilter.GaussianBlur(0.8))
        pixels = np.asarray(image, dtype=np.float32) / 255.0
        height, width = pixels.shape
        shade = 0.86 + 0.06 * np.linspace(0, 1, width)[None, :] * \
            np.linspace(1, 0.6, height)[:, None]
        pixels = pixels * shade + rng.normal(0, 0.035, pixels.shape)
        return Looked(_to_image(pixels), _turn_about_centre(angle, width, height))


@register
class Photo(PageLook):
    """A phone's photo of the page on a table (the module docstring)."""

    name = "photo"

    def draw(self, page, rng):
        image = page.convert("L")
        width, height = image.size
        scale = rng.uniform(0.6, 0.95)
        size = (max(1, int(round(width * scale))), max(1, int(round(height * scale))))
        slant = rng.uniform(0, PHOTO_SLANT, size=(4, 2)) * size
        corners = np.array([[0, 0], [size[0], 0], [size[0], size[1]], [0, size[1]]], float)
        placed = corners + slant * [[1, 1], [-1, 1], [-1, -1], [1, -1]]
        page_corners = np.array([[0, 0], [width, 0], [width, height], [0, height]], float)
        homography = homography_between(page_corners, placed)
        inverse = np.linalg.inv(homography)
        table = rng.uniform(40, 120)
        looked = image.transform(size, Image.PERSPECTIVE, tuple((inverse / inverse[2, 2])
                                                                .ravel()[:8]),
                                 resample=Image.BICUBIC, fillcolor=int(table))
        pixels = np.asarray(looked, dtype=np.float32) / 255.0
        pixels = pixels * _light(size, rng)
        image = _to_image(pixels).filter(ImageFilter.GaussianBlur(rng.uniform(0.4, 1.4)))
        pixels = np.asarray(image, dtype=np.float32) / 255.0 + \
            rng.normal(0, rng.uniform(0.01, 0.04), (size[1], size[0]))
        stored = io.BytesIO()
        _to_image(pixels).save(stored, "JPEG", quality=int(rng.randint(55, 91)))
        return Looked(Image.open(io.BytesIO(stored.getvalue())).convert("L"), homography)


def _light(size, rng):
    """A field of light over an image of ``size``: falling off along a direction drawn with
    ``rng`` (to 0.55-0.9 of its brightest) and towards the corners."""
    width, height = size
    x, y = np.meshgrid(np.linspace(-1, 1, width), np.linspace(-1, 1, height))
    angle = rng.uniform(0, 2 * np.pi)
    along = (x * np.cos(angle) + y * np.sin(angle) + 1.5) / 3.0  # 0.17 .. 0.83
    fall = rng.uniform(0.1, 0.45)
    vignette = 1.0 - rng.uniform(0.0, 0.15) * (x ** 2 + y ** 2) / 2.0
    return ((1.0 - fall) + fall * along) * vignette


def homography_between(source, target):
    """The 3x3 homography carrying the four ``source`` points onto the four ``target``."""
    rows, values = [], []
    for (x, y), (u, v) in zip(source, target):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        values += [u, v]
    return np.append(np.linalg.solve(np.array(rows), np.array(values)), 1.0).reshape(3, 3)


def _turn_about_centre(degrees, width, height):
    """The homography of ``Image.rotate(degrees)`` (counter-clockwise on the screen, about the
    image's centre, same size)."""
    angle = np.radians(degrees)
    cos, sin = np.cos(angle), np.sin(angle)
    cx, cy = width / 2.0, height / 2.0
    turn = np.array([[cos, sin, 0], [-sin, cos, 0], [0, 0, 1]])
    return np.array([[1, 0, cx], [0, 1, cy], [0, 0, 1]]).dot(turn).dot(
        np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1]]))


def _to_image(pixels):
    """A mode L image of ``pixels`` (floats, 0 black to 1 white)."""
    return Image.fromarray((np.clip(pixels, 0, 1) * 255).astype(np.uint8))
