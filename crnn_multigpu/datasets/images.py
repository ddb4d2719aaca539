"""Image normalisation shared by training, evaluation and prediction.

Every image the model sees goes through :func:`load_image`, so a model trained
on synthetic PNGs sees real photos, scans and LMDB crops the same way:

* any Pillow mode becomes one grayscale channel (transparent pixels are laid
  on a background that contrasts with the opaque content);
* the image is resized to a fixed height keeping its aspect ratio;
* polarity is made LIGHT TEXT ON DARK BACKGROUND, so zero padding on the right
  looks like more background. Rule: the background is taken to be the median
  of the border pixels; text is whatever differs from it, so it drags the
  image mean away from the background. If the mean is darker than the border
  median, the background is light and the image is inverted;
* contrast is stretched so the background sits near 0 and the strokes near 1
  (the 2nd percentile maps to 0, the maximum to 1).
"""
import contextlib
import io
import os
import re
import warnings

import numpy as np
from PIL import Image

from crnn_multigpu.datasets.files_check import not_an_image, regular_file

_RESAMPLING = getattr(Image, "Resampling", Image)
_EIGHT_BIT_MODES = ("L", "P", "RGB", "RGBA", "LA", "1", "CMYK", "YCbCr", "RGBX", "PA", "La", "RGBa")
# Below this spread (in [0, 1] units) an image is flat: stretching would only
# amplify noise or quantisation steps.
_MIN_CONTRAST = 2.0 / 255.0
# A file whose header declares more than Image.MAX_IMAGE_PIXELS (89.5 M by default: a 600 dpi
# page of 37 x 50 cm) is refused before it is decoded (:func:`require_pixels`): a 90 KB PNG can
# declare 20000 x 20000 pixels (Pillow itself only warns up to twice the limit, in a raw
# DecompressionBombWarning line). Raise the limit for real large scans with this variable.
MAX_PIXELS_ENV = "CRNN_MAX_IMAGE_PIXELS"
# EXIF's Orientation tag: how a camera's stored pixels must be turned to show what it saw, and
# the transposition that shows them so for each of its values (the EXIF standard's table).
EXIF_ORIENTATION = 0x0112
_TRANSPOSE = getattr(Image, "Transpose", Image)
EXIF_TURNS = {2: _TRANSPOSE.FLIP_LEFT_RIGHT, 3: _TRANSPOSE.ROTATE_180,
              4: _TRANSPOSE.FLIP_TOP_BOTTOM, 5: _TRANSPOSE.TRANSPOSE, 6: _TRANSPOSE.ROTATE_270,
              7: _TRANSPOSE.TRANSVERSE, 8: _TRANSPOSE.ROTATE_90}
# Errors Pillow raises for files it cannot read. DecompressionBombError is neither an
# OSError nor a ValueError; UnidentifiedImageError and truncation are OSErrors, and some
# plugins raise SyntaxError/ValueError/EOFError on garbage headers.
UNREADABLE = (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError)
# The fewest pixels a page has across and down: finding its lines compares rows and columns
# of pixels (a 600 x 1 page reached the line finder and failed there without its name).
MIN_PAGE_SIDE = 2


def _apply_pixel_limit():
    value = os.environ.get(MAX_PIXELS_ENV)
    if value:
        try:
            Image.MAX_IMAGE_PIXELS = int(value)
        except ValueError:
            raise ValueError("$%s must be a number of pixels, got %r" % (MAX_PIXELS_ENV, value))


_apply_pixel_limit()


def _describe(source):
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<%d bytes in memory>" % len(source)
    return str(source)


class UnreadableImage(ValueError):
    """An image that cannot be read: ``cannot read image NAME: REASON``; ``name`` and ``reason``
    apart, for a tool that names the file once (``skipped: NAME: REASON``)."""

    def __init__(self, name, reason):
        super(UnreadableImage, self).__init__("cannot read image %s: %s" % (name, reason))
        self.name, self.reason = name, reason


def pixel_limit():
    """The most pixels an image (or a drawn PDF page) may have: Pillow's ``MAX_IMAGE_PIXELS``,
    set by ``$CRNN_MAX_IMAGE_PIXELS``."""
    return Image.MAX_IMAGE_PIXELS or float("inf")


def require_pixels(pixels, name):
    """Refuse ``pixels`` more than :func:`pixel_limit` for the image called ``name``, in one
    line saying how to raise the limit."""
    if pixels > pixel_limit():
        raise UnreadableImage(name, "it has %.1f M pixels, more than the %.1f M an image may "
                                    "have here (a decompression bomb, or a scan larger than "
                                    "reading needs); if it is genuine, raise the limit with "
                                    "$%s=PIXELS"
                              % (pixels / 1e6, pixel_limit() / 1e6, MAX_PIXELS_ENV))


def open_image(source, name=None, frame=0):
    """A fully decoded PIL image as a viewer shows it: frame ``frame`` (from 0) of a file of
    several (a multi-page TIFF), turned by its EXIF orientation (a phone's photo). Raises
    :class:`UnreadableImage` (a ValueError) naming the source (or ``name``, e.g. a PDF page's)
    and the reason. A path is checked before it is opened (``files_check.regular_file``), and
    the pixels an image declares before it is decoded (:func:`require_pixels`)."""
    name = name or _describe(source)
    if isinstance(source, Image.Image):
        image = source
    elif isinstance(source, (bytes, bytearray, memoryview)):
        image = _header(io.BytesIO(bytes(source)), name, None)
    else:
        path = os.fspath(source)
        regular_file(path)
        image = _header(path, name, path)
    try:
        with quiet_pillow():
            if frame:
                image.seek(frame)
                require_pixels(image.size[0] * image.size[1], name)  # each frame has its size
            # Read before the pixels: loading may close the file a TIFF's tags are read from.
            orientation = image.getexif().get(EXIF_ORIENTATION)
            image.load()  # Image.open only parses the header; truncated pixels surface here
    except UnreadableImage:
        raise
    except UNREADABLE as error:
        raise UnreadableImage(name, damaged(error))
    return upright(image, orientation)


@contextlib.contextmanager
def quiet_pillow():
    """Keep Pillow's own warnings about a file (``Corrupt EXIF data``, a bomb between one and two
    limits) from the user: raw lines of a library's source. What matters is said in one line
    (:func:`require_pixels`, :class:`UnreadableImage`), and an image it decodes reads as is."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


def damaged(error):
    """The reason an image whose header Pillow read cannot be decoded (``error``, Pillow's):
    the file is damaged or cut short, and what to do (Pillow's own words alone, ``image file
    is truncated``, said neither)."""
    return "it is damaged or cut short (Pillow: %s): copy it again or save it anew" % error


def upright(image, orientation):
    """``image`` turned as its EXIF ``orientation`` (1-8, or None) says, as a viewer shows it,
    or itself when it needs no turn: the boxes of a page read from it are in what the user
    sees. The result carries no orientation (it is not turned twice)."""
    method = EXIF_TURNS.get(orientation)
    if method is None:
        return image
    turned = image.transpose(method)
    turned.info.pop("exif", None)
    return turned


def _header(stream, name, path):
    """The image of ``stream`` (a path, or bytes in a BytesIO) opened, not decoded, once its
    size is within the limit; UnreadableImage naming ``name`` otherwise. ``path``: the file, to
    say what it is when Pillow cannot identify it."""
    try:
        with quiet_pillow():
            image = Image.open(stream)
    except Image.DecompressionBombError as error:  # past twice the limit: Pillow refuses
        declared = re.search(r"\((\d+) pixels\)", str(error))
        require_pixels(int(declared.group(1)) if declared else float("inf"), name)
        raise UnreadableImage(name, error)
    except Image.UnidentifiedImageError:
        raise UnreadableImage(name, not_an_image(path) if path else
                              "not an image format Pillow reads")
    except UNREADABLE as error:
        raise UnreadableImage(name, error)
    require_pixels(image.size[0] * image.size[1], name)
    return image


def _flatten_alpha(luminance, alpha):
    """Lay semi-transparent pixels on a background that contrasts with the content.

    Text with an alpha channel is often drawn in a single colour on fully
    transparent pixels whose colour is arbitrary; a fixed white or black
    backdrop would erase either dark or light text.
    """
    if alpha.min() >= 1.0:
        return luminance
    weight = alpha.sum()
    if weight <= 0:
        return np.zeros_like(luminance)
    content_mean = float((luminance * alpha).sum() / weight)
    backdrop = 1.0 if content_mean < 0.5 else 0.0
    return luminance * alpha + backdrop * (1.0 - alpha)


def to_gray_float(image):
    """Any Pillow mode -> float32 [h, w] in [0, 1]: 16-bit scaled by its values, alpha laid on a
    backdrop that contrasts with the content."""
    mode = image.mode
    if mode in ("RGBA", "LA", "PA", "La", "RGBa") or (mode == "P" and "transparency" in image.info):
        with_alpha = image.convert("RGBA").convert("LA")
        pixels = np.asarray(with_alpha, dtype=np.float32) / 255.0
        return _flatten_alpha(pixels[:, :, 0], pixels[:, :, 1])
    if mode in _EIGHT_BIT_MODES:
        return np.asarray(image.convert("L"), dtype=np.float32) / 255.0
    if mode.startswith("I") or mode == "F":
        pixels = np.asarray(image, dtype=np.float32)
        if pixels.ndim == 3:
            pixels = pixels.mean(axis=2)
        peak = float(pixels.max()) if pixels.size else 0.0
        # Pillow opens 16-bit PNGs as 'I' or 'I;16' depending on version;
        # choose the scale from the values rather than the mode name.
        scale = 1.0 if peak <= 1.0 else 255.0 if peak <= 255.0 else 65535.0
        return np.clip(pixels / scale, 0.0, 1.0)
    try:
        return np.asarray(image.convert("RGB").convert("L"), dtype=np.float32) / 255.0
    except (ValueError, OSError) as error:
        raise ValueError("cannot convert image mode %s to grayscale: %s" % (mode, error))


def _luminance(image):
    """The image as mode L, transparency flattened as :func:`to_gray_float` does it.

    8-bit images without alpha convert exactly as ``to_gray_float`` would read them, so a
    ``degrade`` that returns its input leaves ``load_image``'s result unchanged.
    """
    if image.mode == "L":
        return image
    return Image.fromarray(np.round(to_gray_float(image) * 255.0).astype(np.uint8))


def _resize(pixels, width, height):
    resized = Image.fromarray(np.ascontiguousarray(pixels, dtype=np.float32)).resize(
        (width, height), _RESAMPLING.BILINEAR)
    return np.asarray(resized, dtype=np.float32)


def widened(pixels, factor):
    """The normalised crop ``pixels`` ([h, w] or [h, w, 1]) stretched ``factor`` times in
    width, its height kept."""
    height, width = pixels.shape[:2]
    wide = _resize(pixels.reshape(height, width), max(1, int(round(width * factor))), height)
    return wide.reshape(wide.shape + pixels.shape[2:])


def scaled_width(width, height, target_height):
    """Width after resizing ``width x height`` to ``target_height`` keeping aspect (>= 1)."""
    return max(1, int(round(float(width) * target_height / max(1, height))))


def make_light_on_dark(pixels):
    """Invert ``pixels`` when the background (border median) is lighter than the mean."""
    if pixels.shape[0] < 3 or pixels.shape[1] < 3:
        border = pixels.ravel()
    else:
        border = np.concatenate([pixels[0], pixels[-1], pixels[1:-1, 0], pixels[1:-1, -1]])
    if float(np.median(border)) > float(pixels.mean()):
        return 1.0 - pixels
    return pixels


def inverted(pixels):
    """The normalised crop ``pixels`` in the other polarity, its contrast stretched again."""
    return stretch_contrast(1.0 - pixels).astype(pixels.dtype, copy=False)


def stretch_contrast(pixels):
    """Map the 2nd percentile to 0 and the maximum to 1; flat images become all zero."""
    low = float(np.percentile(pixels, 2))
    high = float(pixels.max())
    if high - low < _MIN_CONTRAST:
        return np.zeros_like(pixels)
    return np.clip((pixels - low) / (high - low), 0.0, 1.0)


def load_image(source, height=32, degrade=None):
    """Load and normalise a text-line image.

    Args:
      source: a file path, encoded image bytes, or a PIL image of any mode.
      height: output height in pixels.
      degrade: optional ``PIL image (mode L) -> PIL image (mode L)`` applied to the image at
        its own size before normalisation (training-time augmentation), so that e.g. lost
        contrast is stretched back, noise and all, as for a faded image at inference time.

    Returns:
      float32 array ``[height, width]`` in [0, 1], light text on a dark
      background, with ``width`` chosen to keep the aspect ratio (at least 1).

    Raises:
      ValueError: ``cannot read image <source>: <reason>`` when the file is
      missing, not an image, corrupt, truncated, too large (a decompression bomb) or
      holds non-finite pixels.
    """
    return normalise(grey_pixels(source, degrade), height)


def grey_pixels(source, degrade=None):
    """The image ``source`` (as for :func:`load_image`) as float32 grey ``[h, w]`` in [0, 1]
    at its own size (:func:`to_gray_float`), ``degrade`` applied first; ValueError as
    :func:`load_image` raises it."""
    image = open_image(source)
    if 0 in image.size:
        raise UnreadableImage(_describe(source), "it has no pixels")
    _require_finite(image, source)
    if degrade is not None:
        image = degrade(_luminance(image))
    return to_gray_float(image)


def normalise(pixels, height=32):
    """Grey ``pixels`` (float [h, w] in [0, 1]) as the model sees them: resized to ``height``
    keeping the aspect ratio, light text on dark, contrast stretched (the module docstring)."""
    source_height, source_width = pixels.shape
    width = scaled_width(source_width, source_height, height)
    if (source_height, source_width) != (height, width):
        pixels = _resize(pixels, width, height)
    pixels = stretch_contrast(make_light_on_dark(pixels))
    return pixels.astype(np.float32, copy=False)


def grey_page(source):
    """A page (a path, bytes or a PIL image of any mode) as 8-bit grey (mode L), converted as
    word crops and lines are (:func:`to_gray_float`): 16-bit and float images scaled by their
    values, transparency laid on a contrasting backdrop, palettes and CMYK through RGB. The
    page reader works on this image, so every mode reads alike.

    Raises ValueError naming the source when it cannot be read, is narrower or lower than
    :data:`MIN_PAGE_SIDE` or holds NaN or infinite pixels.
    """
    image = open_image(source)
    if min(image.size) < MIN_PAGE_SIDE:
        raise UnreadableImage(_describe(source), "it is %d x %d pixels, too small for a page "
                              "(at least %d x %d); pass the scan of a page"
                              % (image.size + (MIN_PAGE_SIDE,) * 2))
    _require_finite(image, source)
    return _luminance(image)


def _require_finite(image, source):
    """Float images can hold NaN or Inf, which would reach the whole batch in the model."""
    if image.mode.startswith("I") or image.mode == "F":
        finite = np.isfinite(np.asarray(image, dtype=np.float32))
        if not finite.all():
            raise UnreadableImage(_describe(source), "%d of its pixels are NaN or infinite"
                                  % int(finite.size - finite.sum()))


def fit_width(pixels, width):
    """Squeeze ``pixels`` [h, w] to ``width`` if wider, else zero-pad on the right."""
    height, current = pixels.shape
    if current > width:
        return np.clip(_resize(pixels, width, height), 0.0, 1.0)
    if current == width:
        return pixels.astype(np.float32, copy=False)
    padded = np.zeros((height, width), dtype=np.float32)
    padded[:, :current] = pixels
    return padded
