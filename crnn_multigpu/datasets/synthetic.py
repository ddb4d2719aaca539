"""Synthetic text-line images rendered with Pillow.

``sample(i)`` is a pure function of ``(seed, i)``: its RandomState is seeded
with ``[seed, i mod 2**32, i div 2**32]`` (never Python's ``hash()``), so
workers rendering disjoint index ranges reproduce a single process exactly.
Speed (CPU time of one core, DejaVu fonts, defaults): ``sample`` 600-1050
images/s with Pillow 13, ~500 with Pillow 9.5; ``write_dataset`` 370-650.
"""
import math
import string
import threading

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from crnn_multigpu.datasets.folder import with_progress, write_dataset  # noqa: F401 (re-export)
from crnn_multigpu.datasets.fonts import load_font
from crnn_multigpu.datasets.images import load_image

_RESAMPLING = getattr(Image, "Resampling", Image)
_AFFINE = getattr(Image, "Transform", Image).AFFINE
VOWELS = "aeiou"
# Syllable shapes for pronounceable pseudo-words: C = consonant, V = vowel.
_SYLLABLES = ("CV", "CV", "CVC", "V", "VC", "CCV")


def _seed_words(seed, index):
    return [seed % 2 ** 32, index % 2 ** 32, (index // 2 ** 32) % 2 ** 32]


class SyntheticTextGenerator(object):
    """Random text rendered in random fonts with moderate, configurable distortions.

    ``fonts`` must all draw the charset (see ``find_fonts(chars=...)``); font
    sizes are chosen around ``height``; texts have ``min_len..max_len``
    characters, a ``word_fraction`` of them pronounceable pseudo-words when
    the charset has latin letters. ``difficulty`` in [0, 1] scales rotation,
    shear, spacing, contrast loss, background texture, blur and noise; 1 is
    the strongest setting that keeps glyphs readable.
    """

    def __init__(self, charset, fonts, height=32, min_len=1, max_len=10, seed=0,
                 difficulty=0.5, word_fraction=0.5):
        if not fonts:
            raise ValueError("SyntheticTextGenerator needs at least one font file")
        if not 1 <= min_len <= max_len:
            raise ValueError("need 1 <= min_len <= max_len, got %d and %d" % (min_len, max_len))
        if not 0.0 <= difficulty <= 1.0:
            raise ValueError("difficulty must be in [0, 1], got %r" % difficulty)
        self.charset, self.fonts, self.height, self.seed = charset, list(fonts), height, seed
        self.min_len, self.max_len = min_len, max_len
        self.difficulty, self.word_fraction = float(difficulty), word_fraction
        self._visible = [c for c in charset.chars if not c.isspace()]
        if not self._visible:
            raise ValueError("the charset has only whitespace: nothing to render")
        self._space = next((c for c in charset.chars if c == " "), None)
        letters = set(c.lower() for c in charset.chars if c in string.ascii_letters)
        self._vowels = sorted(letters & set(VOWELS))
        self._consonants = sorted(letters - set(VOWELS))
        self._digits = [c for c in charset.chars if c.isdigit()]
        self._size_range = (max(8, int(round(0.75 * height))), max(9, int(round(1.5 * height))))
        self._fonts_cache = {}
        self._thread_state = threading.local()

    def _random_string(self, rng, length):
        picks = rng.randint(0, len(self._visible), size=length)
        chars = [self._visible[i] for i in picks]
        if self._space is not None and length >= 3:
            # Spaces only between visible characters, never doubled: leading,
            # trailing or repeated spaces cannot be seen in the image.
            for position in range(1, length - 1):
                if rng.rand() < 0.12 and chars[position - 1] != self._space:
                    chars[position] = self._space
        return "".join(chars)

    def _in_charset(self, letter, upper):
        preferred, other = (letter.upper(), letter) if upper else (letter, letter.upper())
        return other if preferred not in self.charset and other in self.charset else preferred

    def _pseudo_word(self, rng, length):
        letters = []
        while len(letters) < length:
            for slot in _SYLLABLES[rng.randint(len(_SYLLABLES))]:
                pool = self._vowels if slot == "V" else self._consonants
                letters.append(pool[rng.randint(len(pool))])
        letters = letters[:length]
        style = rng.rand()
        uppercase = [style > 0.85] * length
        if 0.6 < style <= 0.85:
            uppercase[0] = True
        word = [self._in_charset(l, u) for l, u in zip(letters, uppercase)]
        if self._digits and length >= 3 and rng.rand() < 0.2:
            for position in range(length - rng.randint(1, 3), length):
                word[position] = self._digits[rng.randint(len(self._digits))]
        return "".join(word)

    def random_text(self, rng):
        """A text of ``min_len..max_len`` characters drawn with ``rng``."""
        length = rng.randint(self.min_len, self.max_len + 1)
        if self._vowels and self._consonants and rng.rand() < self.word_fraction:
            return self._pseudo_word(rng, length)
        return self._random_string(rng, length)

    def _font(self, path, size):
        key = (path, size)
        if key not in self._fonts_cache:
            font = load_font(path, size)
            # Frame every line by the charset's tallest/deepest glyphs, so 'o'
            # keeps its x-height and does not turn into a full-height 'O'.
            _, top, _, bottom = font.getbbox("".join(self._visible[:200]))
            self._fonts_cache[key] = (font, top, bottom)
        return self._fonts_cache[key]

    def _draw_mask(self, text, font, top, bottom, spacing, pad):
        """Coverage mask of the text line, and the corners of its line box."""
        advances = [font.getlength(c) for c in text] if spacing else [font.getlength(text)]
        line_width = int(math.ceil(sum(advances) + spacing * (len(advances) - 1)))
        width, height = max(1, line_width) + 2 * pad, (bottom - top) + 2 * pad
        mask = Image.new("L", (width, height), 0)
        draw = ImageDraw.Draw(mask)
        if spacing:
            x = float(pad)
            for char, advance in zip(text, advances):
                draw.text((int(round(x)), pad - top), char, fill=255, font=font)
                x += advance + spacing
        else:
            draw.text((pad, pad - top), text, fill=255, font=font)
        right, lower = pad + line_width, height - pad
        return mask, [(pad, pad), (right, pad), (pad, lower), (right, lower)]

    def _warp(self, mask, box, rng):
        """Small rotation, shear and horizontal stretch; returns warped mask and box rows."""
        d = self.difficulty
        angle = math.radians(rng.uniform(-1, 1) * (1.0 + 3.0 * d))
        shear = rng.uniform(-1, 1) * (0.05 + 0.25 * d)
        stretch = math.exp(rng.uniform(-1, 1) * (0.05 + 0.2 * d))
        cos, sin = math.cos(angle), math.sin(angle)
        # forward = rotation . shear . stretch, as a 2x2 matrix [[a, b], [c, e]];
        # plain floats because numpy's linalg costs milliseconds per call on old stacks.
        a, b = cos * stretch, cos * shear - sin
        c, e = sin * stretch, sin * shear + cos
        width, height = mask.size
        cx, cy = width / 2.0, height / 2.0

        def forward(x, y):
            return a * (x - cx) + b * (y - cy), c * (x - cx) + e * (y - cy)

        moved = [forward(x, y) for x in (0, width) for y in (0, height)]
        off_x, off_y = -min(p[0] for p in moved), -min(p[1] for p in moved)
        size = (int(math.ceil(max(p[0] for p in moved) + off_x)),
                int(math.ceil(max(p[1] for p in moved) + off_y)))
        det = a * e - b * c
        ia, ib, ic, ie = e / det, -b / det, -c / det, a / det
        # PIL maps each output pixel back to the input: in = inverse (out - offset) + centre.
        data = (ia, ib, cx - ia * off_x - ib * off_y, ic, ie, cy - ic * off_x - ie * off_y)
        warped = mask.transform(size, _AFFINE, data, _RESAMPLING.BILINEAR)
        box_rows = [forward(x, y)[1] + off_y for x, y in box]
        return warped, min(box_rows), max(box_rows)

    def _background(self, rng, shape, level, amplitude):
        kind = rng.rand()
        if kind < 0.4 or amplitude <= 0:
            return np.full(shape, level, dtype=np.float32)
        if kind < 0.7:
            rows, cols = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float32)
            angle = rng.uniform(0, 2 * math.pi)
            ramp = math.cos(angle) * cols + math.sin(angle) * rows
            ramp = ramp - ramp.min()
            texture = 2.0 * ramp / max(float(ramp.max()), 1e-6) - 1.0
        else:
            coarse = rng.uniform(-1, 1, size=(shape[0] // 8 + 2, shape[1] // 8 + 2))
            texture = np.asarray(Image.fromarray(coarse.astype(np.float32)).resize(
                (shape[1], shape[0]), _RESAMPLING.BILINEAR))
        return (level + amplitude * texture).astype(np.float32)

    def render(self, text, rng):
        """Render ``text`` into a grayscale PIL image using randomness from ``rng``."""
        font_path = self.fonts[rng.randint(len(self.fonts))]
        size = rng.randint(self._size_range[0], self._size_range[1] + 1)
        font, top, bottom = self._font(font_path, size)
        spacing = 0
        if len(text) > 1 and rng.rand() < 0.4:
            spacing = int(round(size * rng.uniform(-0.03, 0.05 + 0.25 * self.difficulty)))
        mask, box = self._draw_mask(text, font, top, bottom, spacing, pad=size // 2 + 2)
        mask, box_top, box_bottom = self._warp(mask, box, rng)
        coverage = self._crop(mask, box_top, box_bottom, bottom - top, rng)
        return self._degrade(self._paint(coverage, rng), rng)

    def _crop(self, mask, box_top, box_bottom, line_height, rng):
        """Ink extent horizontally, line box vertically, plus random margins; as floats."""
        margin_x = (0.1 + 0.4 * self.difficulty) * line_height
        margin_y = (0.05 + 0.2 * self.difficulty) * line_height
        ink = mask.getbbox() or (0, 0) + mask.size
        left = max(0, int(ink[0] - rng.uniform(0, margin_x)))
        right = min(mask.size[0], int(math.ceil(ink[2] + rng.uniform(0, margin_x))))
        upper = max(0, int(min(box_top, ink[1]) - rng.uniform(0, margin_y)))
        lower = min(mask.size[1],
                    int(math.ceil(max(box_bottom, ink[3]) + rng.uniform(0, margin_y))))
        return np.asarray(mask.crop((left, upper, right, lower)), dtype=np.float32) / 255.0

    def _paint(self, coverage, rng):
        """Ink and paper levels at least ``contrast`` apart even at the texture's extremes."""
        d = self.difficulty
        contrast = rng.uniform(0.75 - 0.4 * d, 1.0)
        amplitude = min(rng.uniform(0, 0.05 + 0.2 * d), (1.0 - contrast) / 2.0)
        ink_level = rng.uniform(0, 1.0 - contrast - 2 * amplitude)
        paper_level = ink_level + contrast + amplitude
        if rng.rand() < 0.5:
            ink_level, paper_level = 1.0 - ink_level, 1.0 - paper_level
        paper = self._background(rng, coverage.shape, paper_level, amplitude)
        pixels = paper * (1.0 - coverage) + ink_level * coverage
        return Image.fromarray(np.clip(pixels * 255.0 + 0.5, 0, 255).astype(np.uint8))

    def _degrade(self, image, rng):
        d = self.difficulty
        if rng.rand() < 0.15 + 0.35 * d:
            # Radius in output pixels (after scaling to `height`), converted to this image.
            radius = rng.uniform(0.3, 0.5 + 0.7 * d) * image.size[1] / float(self.height)
            image = image.filter(ImageFilter.GaussianBlur(radius))
        sigma = rng.uniform(0, 0.01 + 0.05 * d) * 255.0
        if sigma > 0.5:
            noisy = np.asarray(image, dtype=np.float32) + rng.normal(0, sigma, image.size[::-1])
            image = Image.fromarray(np.clip(noisy + 0.5, 0, 255).astype(np.uint8))
        return image

    def sample(self, index):
        """``(PIL grayscale image, text)`` for ``index``; identical for the same seed and index."""
        # Re-seeding a per-thread RandomState is ~10x cheaper than building
        # one, and gives the same stream as RandomState(_seed_words(...)).
        rng = getattr(self._thread_state, "rng", None)
        if rng is None:
            rng = self._thread_state.rng = np.random.RandomState()
        rng.seed(_seed_words(self.seed, index))
        text = self.random_text(rng)
        return self.render(text, rng), text

    def iterate(self, start, count):
        """Yield ``sample(i)`` for ``i`` in ``start .. start + count - 1``."""
        for index in range(start, start + count):
            yield self.sample(index)


class SyntheticDataset(object):
    """A generator seen as a dataset: ``ds[i] = (load_image(sample(start + i)), text)``."""

    def __init__(self, generator, size, start=0, height=32):
        self.generator, self.size, self.start, self.height = generator, size, start, height
        self.rejected, self.unreadable = {}, []

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError("sample %d out of range for %d samples" % (index, self.size))
        image, text = self.generator.sample(self.start + index)
        return load_image(image, self.height), text

    def safe_get(self, index):
        """Same as ``ds[index]``: rendered samples are always readable."""
        return self[index]
