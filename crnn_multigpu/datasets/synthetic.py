"""Synthetic text images rendered with Pillow: many typefaces, real words, real-world looks.

``sample(i)`` is a pure function of ``(seed, i)``: its RandomState is seeded
with ``[seed, i mod 2**32, i div 2**32]`` (never Python's ``hash()``), so
workers rendering disjoint index ranges reproduce a single process exactly.

A rendering goes: text (:mod:`words`, or :mod:`lines` for whole printed lines) -> glyph coverage with optional outline,
neighbouring glyphs, letter-spacing and a curved baseline -> rotation, shear,
stretch and sometimes perspective -> a crop from tight to loose around the
word's box (neighbours show as cut glyphs at the edges) -> colours on flat,
gradient, noisy or striped paper, sometimes with a drop shadow -> camera and
compression degradations (:mod:`augment`).

Whole printed lines (``lines=True``) take the same path with a document's habits: no cut
neighbour glyphs, print sizes, a tilt that keeps the line within its own height, no
perspective, and now
and then one to three words in a second face of the line (its bold or italic sister, or a
monospaced face), baseline-aligned as documents set them.
"""
import logging
import math
import re
import threading

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from crnn_multigpu.datasets.augment import Degrader
from crnn_multigpu.datasets.fonts import face_gaps, font_family, font_style, load_font
from crnn_multigpu.datasets.underline import underline
from crnn_multigpu.datasets.words import TextSampler

log = logging.getLogger(__name__)
_RESAMPLING = getattr(Image, "Resampling", Image)
_TRANSFORM = getattr(Image, "Transform", Image)
# Lines with one to three words in a second face (bold, italic or mono), as documents mix them.
MIXED_FACE_SHARE = 0.25
# Texts drawn for one sample before giving up when no face draws them.
TEXT_DRAWS = 100
# ITU-R 601 luma, what Pillow's RGB -> L uses: colour pairs become grey contrasts.
_LUMA = np.array([0.299, 0.587, 0.114])


def sample_seed(seed, index):
    """The RandomState seed of sample ``index``: ``[seed, index mod 2**32, index div 2**32]``."""
    return [seed % 2 ** 32, index % 2 ** 32, (index // 2 ** 32) % 2 ** 32]


class SyntheticTextGenerator(object):
    """Texts rendered in random fonts, colours, geometry and degradations.

    ``fonts`` must draw the charset (see ``find_fonts(chars=...)``); a text that needs a
    character its drawn face lacks (:func:`~crnn_multigpu.datasets.fonts.face_gaps`) is drawn in
    another face that has them all, and a text no face draws whole is drawn again (characters
    that no face has are named in a warning: no sample holds them). Font sizes are chosen around
    ``height``; texts have ``min_len..max_len`` characters, drawn by :class:`~crnn_multigpu.datasets.words.TextSampler`
    (``words``: a word list path or object; None = the system word list;
    ``kinds``: which kinds of text, default all).
    ``difficulty`` in [0, 1] scales geometry, contrast loss, clutter and
    degradations; 1 is the strongest setting that keeps glyphs readable.
    ``texts``: any other text source with ``sample(rng) -> (drawn, label)`` instead of the
    word sampler, e.g. :class:`~crnn_multigpu.datasets.lines.LineSampler`.
    ``lines``: render whole printed lines (see the module docstring).
    ``underline``: the share of samples with a link's underline under some of their words
    (``datasets.underline``); 0 draws none and leaves every sample as it was without it.
    """

    def __init__(self, charset, fonts, height=32, min_len=1, max_len=10, seed=0,
                 difficulty=0.5, words=None, kinds=None, texts=None, lines=False, underline=0.0):
        if not fonts:
            raise ValueError("SyntheticTextGenerator needs at least one font file")
        if not 1 <= min_len <= max_len:
            raise ValueError("need 1 <= min_len <= max_len, got %d and %d" % (min_len, max_len))
        if not 0.0 <= difficulty <= 1.0:
            raise ValueError("difficulty must be in [0, 1], got %r" % difficulty)
        if not 0.0 <= underline <= 1.0:
            raise ValueError("underline must be a share in [0, 1], got %r" % underline)
        self.underline = float(underline)
        self.charset, self.fonts, self.height, self.seed = charset, list(fonts), height, seed
        self.min_len, self.max_len = min_len, max_len
        self.difficulty = float(difficulty)
        self.texts = texts or TextSampler(charset, min_len, max_len, words, kinds)
        self.lines = bool(lines)
        self._visible = [c for c in charset.chars if not c.isspace()]
        if not self._visible:
            raise ValueError("the charset has only whitespace: nothing to render")
        self._gaps = face_gaps(self.fonts, charset.chars)
        lacked = frozenset().union(*self._gaps.values())
        # Cut neighbours at the crop edges, whatever the face: characters every face draws.
        self._neighbours = [c for c in self._visible if c.isalnum() and c not in lacked] or \
            [c for c in self._visible if c not in lacked]
        nowhere = lacked.intersection(*[self._gaps.get(face, ()) for face in self.fonts])
        if nowhere:
            log.warning("no font draws %d character(s) of the charset (%s): no sample holds "
                        "them; add a font that draws them", len(nowhere), "".join(sorted(nowhere)))
        self._size_range = (max(8, int(round(0.75 * height))), max(9, int(round(1.5 * height))))
        if self.lines:
            # Body text of pages rasterised at 100-150 dpi (15-25 px) up to small headings.
            self._size_range = (max(8, int(round(0.45 * height))), max(9, int(round(1.05 * height))))
            self._second_faces = _second_faces(self.fonts)
        self.degrade = Degrader(self.difficulty, reference_height=height)
        self._fonts_cache = {}
        self._thread_state = threading.local()

    def __getstate__(self):
        """Picklable for worker processes: caches and thread state are rebuilt there."""
        state = dict(self.__dict__)
        state["_fonts_cache"], state["_thread_state"] = {}, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._thread_state = threading.local()

    def random_text(self, rng):
        """The ``(drawn, label)`` pair of one sample, drawn with ``rng``."""
        return self.texts.sample(rng)

    def _font(self, path, size):
        key = (path, size)
        if key not in self._fonts_cache:
            # Frame every line by the charset's tallest/deepest glyphs, so 'o'
            # keeps its x-height and does not turn into a full-height 'O'.
            # Measured once per font at a reference size and scaled: measuring
            # every size costs more than rendering.
            if path not in self._fonts_cache:
                gaps = self._gaps.get(path, ())
                sample = "".join([c for c in self._visible if c not in gaps][:200])
                _, top, _, bottom = load_font(path, 64).getbbox(sample + sample.upper())
                self._fonts_cache[path] = (top / 64.0, bottom / 64.0)
            top, bottom = self._fonts_cache[path]
            self._fonts_cache[key] = (load_font(path, size), int(math.floor(top * size)),
                                      int(math.ceil(bottom * size)))
        return self._fonts_cache[key]

    def _draws(self, face, text):
        return face not in self._gaps or self._gaps[face].isdisjoint(text)

    def _drawable(self, text):
        """True if some face draws every character of ``text``."""
        return not self._gaps or any(self._draws(face, text) for face in self.fonts)

    def _face_drawing(self, text, rng):
        """A face, drawn from ``rng``, that has every character of ``text``."""
        faces = [face for face in self.fonts if self._draws(face, text)]
        if not faces:
            lacked = sorted(char for char in set(text)
                            if any(char in gaps for gaps in self._gaps.values()))
            raise ValueError("none of the %d fonts draws %s (in %r); add a font that does"
                             % (len(self.fonts), "".join(lacked), text))
        return faces[rng.randint(len(faces))]

    def _context(self, rng):
        """Glyphs that stood next to the word in a larger text: cut at the crop edges."""
        if rng.rand() >= 0.1 + 0.3 * self.difficulty:
            return "", ""
        def piece():
            count = rng.randint(0, 3)
            chars = "".join(self._neighbours[i] for i in rng.randint(len(self._neighbours),
                                                                     size=count))
            return chars
        before, after = piece(), piece()
        gap = " " if rng.rand() < 0.5 else ""
        return (before + gap if before else ""), (gap + after if after else "")

    def _draw_layers(self, text, before, after, font, top, bottom, spacing, stroke, pad):
        """Fill and outline coverage of the line (bands R and G), its word box corners, and
        the room a crop has past the box on each side (None without neighbours)."""
        full = before + text + after
        advances = [font.getlength(c) for c in full] if spacing else None
        def width_of(part_start, part_end):
            if spacing:
                return sum(advances[part_start:part_end]) + spacing * max(0, part_end - part_start)
            return font.getlength(full[:part_end]) - font.getlength(full[:part_start])
        line_width = int(math.ceil(width_of(0, len(full)))) + 2 * stroke
        width, height = max(1, line_width) + 2 * pad, (bottom - top) + 2 * pad + 2 * stroke
        layers = Image.new("RGB", (width, height), (0, 0, 0))
        draw = ImageDraw.Draw(layers)
        origin_y = pad + stroke - top
        extra = dict(stroke_width=stroke, stroke_fill=(0, 255, 0)) if stroke else {}
        if spacing:
            x = float(pad + stroke)
            for char, advance in zip(full, advances):
                draw.text((int(round(x)), origin_y), char, fill=(255, 255, 0), font=font, **extra)
                x += advance + spacing
        else:
            draw.text((pad + stroke, origin_y), full, fill=(255, 255, 0), font=font, **extra)
        left = pad + width_of(0, len(before))
        right = left + width_of(len(before), len(before) + len(text)) + 2 * stroke
        lower = height - pad
        room = (self._room(font, before[::-1], False), self._room(font, after, True)) \
            if before or after else None
        return layers, [(left, pad), (right, pad), (left, lower), (right, lower)], room

    def _faces_of_words(self, text, font_path, font, size, rng):
        """``[(piece, font)]``: the line in its face, now and then a few words in a second face."""
        spans = [match.span() for match in re.finditer(r"\S+", text)]
        if len(spans) < 2 or rng.rand() >= MIXED_FACE_SHARE:
            return [(text, font)]
        sisters, monos = [[face for face in faces if self._draws(face, text)]
                          for faces in self._second_faces[font_path]]
        pool = sisters if sisters and (rng.rand() < 0.6 or not monos) else monos
        if not pool:
            return [(text, font)]
        second = self._font(pool[rng.randint(len(pool))], size)[0]
        first = rng.randint(len(spans))
        last = min(len(spans), first + rng.randint(1, 4)) - 1
        start, end = spans[first][0], spans[last][1]
        runs = [(text[:start], font), (text[start:end], second), (text[end:], font)]
        return [(piece, face) for piece, face in runs if piece]

    def _draw_runs(self, runs, top, bottom, spacing, stroke, pad):
        """Like :meth:`_draw_layers` for a line set in runs of faces, on the first face's
        baseline (framed by its ``top``/``bottom``), without neighbours."""
        first = runs[0][1]
        chars = [(char, face) for piece, face in runs for char in piece]
        if spacing:
            pieces = [(char, face, face.getlength(char) + spacing) for char, face in chars]
        else:
            pieces = [(piece, face, face.getlength(piece)) for piece, face in runs]
        line_width = int(math.ceil(sum(advance for _, _, advance in pieces))) + 2 * stroke
        width, height = max(1, line_width) + 2 * pad, (bottom - top) + 2 * pad + 2 * stroke
        layers = Image.new("RGB", (width, height), (0, 0, 0))
        draw = ImageDraw.Draw(layers)
        baseline = pad + stroke - top + first.getmetrics()[0]
        extra = dict(stroke_width=stroke, stroke_fill=(0, 255, 0)) if stroke else {}
        x = float(pad + stroke)
        for piece, face, advance in pieces:
            draw.text((int(round(x)), baseline), piece, fill=(255, 255, 0), font=face,
                      anchor="ls", **extra)
            x += advance
        left, right, lower = pad, pad + line_width, height - pad
        return layers, [(left, pad), (right, pad), (left, lower), (right, lower)], None

    @staticmethod
    def _room(font, outward, right_side):
        """How far a crop may reach past the word into its neighbours (``outward`` from it).

        Past the gap and the nearest glyph's side bearing, into a sixth of its ink:
        enough to show a glyph was cut, never a whole thin one ('1', 'l') that the
        label does not contain.
        """
        gap = len(outward) - len(outward.lstrip(" "))
        if gap == len(outward):
            return float("inf")
        glyph = outward[gap]
        ink_left, _, ink_right, _ = font.getbbox(glyph)
        bearing = ink_left if right_side else font.getlength(glyph) - ink_right
        return font.getlength(" ") * gap + max(0, bearing) + 0.15 * (ink_right - ink_left)

    def _curve(self, layers, size, rng):
        """A wavy or arched baseline: columns shifted up and down by up to ~a fifth of the size."""
        if rng.rand() >= 0.15 * self.difficulty + 0.05:
            return layers, 0
        pixels = np.asarray(layers)
        height, width = pixels.shape[:2]
        amplitude = rng.uniform(0.05, 0.2) * size
        phase, cycles = rng.uniform(0, 2 * math.pi), rng.uniform(0.3, 1.2)
        columns = np.arange(width)
        shifts = np.round(amplitude * np.sin(phase + 2 * math.pi * cycles * columns / width))
        rows = (np.arange(height)[:, None] - shifts[None, :].astype(int)) % height
        return Image.fromarray(pixels[rows, columns[None, :]]), int(math.ceil(amplitude))

    def _warp(self, image, box, rng):
        """Rotation, shear, stretch (and sometimes perspective); returns image and box extent."""
        d = self.difficulty
        angle = math.radians(rng.uniform(-1, 1) * (1.0 + 4.0 * d))
        if self.lines:  # a long line tilted by degrees would climb past its own height
            limit = math.atan(0.15 * image.size[1] / float(image.size[0]))
            angle = max(-limit, min(limit, angle))
        shear = rng.uniform(-1, 1) * (0.05 + 0.3 * d)
        stretch = math.exp(rng.uniform(-1, 1) * (0.05 + 0.25 * d))
        cos, sin = math.cos(angle), math.sin(angle)
        # forward = rotation . shear . stretch, as a 2x2 matrix [[a, b], [c, e]];
        # plain floats because numpy's linalg costs milliseconds per call on old stacks.
        a, b = cos * stretch, cos * shear - sin
        c, e = sin * stretch, sin * shear + cos
        width, height = image.size
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
        warped = image.transform(size, _TRANSFORM.AFFINE, data, _RESAMPLING.BILINEAR)
        corners = [(p[0] + off_x, p[1] + off_y) for p in (forward(x, y) for x, y in box)]
        # Pages are flat: a keystone that halves a long line's far end is a photo's look.
        if rng.rand() < 0.15 * d and not self.lines:
            warped, corners = self._perspective(warped, corners, rng)
        return warped, corners

    def _perspective(self, image, corners, rng):
        """Keystone: one end of the line nearer the camera than the other."""
        width, height = image.size
        squeeze = rng.uniform(0.05, 0.25) * height
        near_left = rng.rand() < 0.5
        # Output corners (tl, tr, bl, br) of the input's full frame.
        dst = [(0, squeeze if not near_left else 0), (width, squeeze if near_left else 0),
               (0, height - (squeeze if not near_left else 0)),
               (width, height - (squeeze if near_left else 0))]
        src = [(0, 0), (width, 0), (0, height), (width, height)]
        coefficients = _perspective_coefficients(dst, src)
        warped = image.transform(image.size, _TRANSFORM.PERSPECTIVE, coefficients,
                                 _RESAMPLING.BILINEAR)
        forward = _perspective_coefficients(src, dst)
        return warped, [_apply_perspective(forward, x, y) for x, y in corners]

    def _crop(self, layers, corners, curve, line_height, room, rng):
        """From tight to loose around the word (its box, or its ink without neighbours)."""
        d = self.difficulty
        loose = rng.rand() < 0.3
        margin_x = (0.05 + (0.6 if loose else 0.25) * d) * line_height
        margin_y = (0.02 + (0.4 if loose else 0.15) * d) * line_height
        ink_layer = layers.getchannel("G")  # fill and outline
        ink = ink_layer.getbbox() or (0, 0) + ink_layer.size
        xs, ys = [p[0] for p in corners], [p[1] for p in corners]
        if room:
            ink_left, ink_right = min(xs), max(xs)
        else:
            ink_left, ink_right = ink[0], ink[2]
        room_left, room_right = room or (margin_x, margin_x)
        width, height = layers.size
        left = max(0, int(ink_left - rng.uniform(-0.02, 1) * min(margin_x, room_left)))
        right = min(width, int(math.ceil(ink_right + rng.uniform(-0.02, 1)
                                         * min(margin_x, room_right))))
        upper = max(0, int(min(min(ys) - curve, ink[1]) - rng.uniform(0, margin_y)))
        lower = min(height, int(math.ceil(max(max(ys) + curve, ink[3]) + rng.uniform(0, margin_y))))
        if right - left < 2:
            left, right = 0, width
        if lower - upper < 2:
            upper, lower = 0, height
        pixels = np.asarray(layers.crop((left, upper, right, lower)), dtype=np.float32) / 255.0
        return pixels[:, :, 0], pixels[:, :, 1]

    def _paint(self, fill, outline, rng):
        """Colours (as luma) for paper, text, outline and shadow; paper texture."""
        d = self.difficulty
        min_contrast = 0.5 - 0.35 * d
        for _ in range(20):
            paper, ink = rng.rand(2, 3).dot(_LUMA)
            if rng.rand() < 0.35:  # plain dark-on-light print is the commonest case
                paper, ink = 0.85 + 0.15 * rng.rand(), 0.15 * rng.rand()
                if rng.rand() < 0.2:
                    paper, ink = ink, paper
            if abs(paper - ink) >= min_contrast:
                break
        else:
            ink = paper - min_contrast if paper > 0.5 else paper + min_contrast
        contrast = abs(paper - ink)
        amplitude = rng.uniform(0, 0.45) * contrast
        canvas = _background(rng, fill.shape, paper, amplitude)
        has_outline = outline is not fill and rng.rand() < 0.9
        if rng.rand() < 0.12 + 0.1 * d:
            canvas = self._shadow(canvas, outline if has_outline else fill, paper, ink, rng)
        if has_outline:
            edge = float(np.clip(ink + (0.5 if ink < 0.5 else -0.5) + rng.uniform(-0.2, 0.2), 0, 1))
            canvas = canvas * (1.0 - outline) + edge * outline
        pixels = canvas * (1.0 - fill) + ink * fill
        return Image.fromarray(np.clip(pixels * 255.0 + 0.5, 0, 255).astype(np.uint8))

    def _shadow(self, canvas, coverage, paper, ink, rng):
        """A blurred copy of the glyphs, offset down-right or anywhere, darker or lighter."""
        height = coverage.shape[0]
        dx, dy = (int(round(v)) for v in rng.uniform(-0.08, 0.12, size=2) * height)
        shadow = np.roll(np.roll(coverage, dy, axis=0), dx, axis=1)
        blurred = Image.fromarray((shadow * 255).astype(np.uint8)).filter(
            ImageFilter.GaussianBlur(rng.uniform(0, 0.06) * height))
        shadow = np.asarray(blurred, dtype=np.float32) / 255.0
        level = paper + (ink - paper) * rng.uniform(0.3, 0.7)
        return canvas * (1.0 - shadow) + level * shadow

    def render(self, text, rng):
        """Render ``text`` into a grayscale PIL image using randomness from ``rng``."""
        d = self.difficulty
        font_path = self.fonts[rng.randint(len(self.fonts))]
        if not self._draws(font_path, text):
            font_path = self._face_drawing(text, rng)
        size = rng.randint(self._size_range[0], self._size_range[1] + 1)
        font, top, bottom = self._font(font_path, size)
        spacing = 0
        if len(text) > 1 and rng.rand() < 0.3:
            spacing = int(round(size * rng.uniform(-0.04, 0.05 + 0.3 * d)))
        stroke = int(rng.randint(1, max(2, size // 12) + 1)) if rng.rand() < 0.08 + 0.07 * d else 0
        if self.lines:
            runs = self._faces_of_words(text, font_path, font, size, rng)
            layers, box, room = self._draw_runs(runs, top, bottom, spacing, stroke,
                                                pad=size // 2 + 2)
        else:
            before, after = self._context(rng)
            layers, box, room = self._draw_layers(text, before, after, font, top, bottom,
                                                  spacing, stroke, pad=size // 2 + 2)
        # Drawn only when asked: a recipe without underlines keeps its random stream.
        if self.underline and rng.rand() < self.underline:
            baseline = size // 2 + 2 + stroke - top + font.getmetrics()[0]
            layers = underline(layers, baseline, size, (box[0][0], box[1][0]), rng)
        layers, curve = self._curve(layers, size, rng)
        layers, corners = self._warp(layers, box, rng)
        fill, outline = self._crop(layers, corners, curve, bottom - top, room, rng)
        image = self._paint(fill, outline if stroke else fill, rng)
        return self.degrade(image, rng)

    def sample(self, index):
        """``(PIL grayscale image, label)`` for ``index``; identical for the same seed and index."""
        # Re-seeding a per-thread RandomState is ~10x cheaper than building
        # one, and gives the same stream as RandomState(sample_seed(...)).
        rng = getattr(self._thread_state, "rng", None)
        if rng is None:
            rng = self._thread_state.rng = np.random.RandomState()
        rng.seed(sample_seed(self.seed, index))
        drawn, label = self.random_text(rng)
        for _ in range(TEXT_DRAWS - 1):
            if self._drawable(drawn):
                break
            drawn, label = self.random_text(rng)
        return self.render(drawn, rng), label

    def iterate(self, start, count):
        """Yield ``sample(i)`` for ``i`` in ``start .. start + count - 1``."""
        for index in range(start, start + count):
            yield self.sample(index)


def _second_faces(fonts):
    """``{font: (sisters, monos)}``: faces of the same family in another style, and
    monospaced faces of other families, for words set apart within a line."""
    family = dict((path, font_family(path)) for path in fonts)
    style = dict((path, font_style(path)) for path in fonts)
    monos = [path for path in fonts if "mono" in style[path]]
    return dict((path, ([other for other in fonts if family[other] == family[path] and
                         style[other] != style[path]],
                        [other for other in monos if family[other] != family[path]]))
                for path in fonts)


def _background(rng, shape, level, amplitude):
    """Paper of mean ``level``: flat, a gradient, smooth blotches, grain, or stripes."""
    kind = rng.rand()
    if kind < 0.35 or amplitude <= 0:
        return np.full(shape, level, dtype=np.float32)
    rows, cols = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float32)
    if kind < 0.55:
        angle = rng.uniform(0, 2 * math.pi)
        texture = math.cos(angle) * cols + math.sin(angle) * rows
    elif kind < 0.8:
        cell = rng.choice([2, 4, 8, 16])
        coarse = rng.uniform(-1, 1, size=(shape[0] // cell + 2, shape[1] // cell + 2))
        texture = np.asarray(Image.fromarray(coarse.astype(np.float32)).resize(
            (shape[1], shape[0]), _RESAMPLING.BICUBIC))
    elif kind < 0.9:
        texture = rng.uniform(-1, 1, size=shape)
    else:
        angle, period = rng.uniform(0, math.pi), rng.uniform(3, 12)
        texture = np.sin((math.cos(angle) * cols + math.sin(angle) * rows) * 2 * math.pi / period)
    texture = texture - texture.min()
    texture = 2.0 * texture / max(float(texture.max()), 1e-6) - 1.0
    return (level + amplitude * texture).astype(np.float32)


def _perspective_coefficients(output_points, input_points):
    """The 8 coefficients PIL's PERSPECTIVE transform takes: output (x, y) -> input point."""
    matrix, target = [], []
    for (x, y), (u, v) in zip(output_points, input_points):
        matrix.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        matrix.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        target.extend([u, v])
    return tuple(np.linalg.solve(np.array(matrix, dtype=np.float64), np.array(target)))


def _apply_perspective(coefficients, x, y):
    a, b, c, d, e, f, g, h = coefficients
    w = g * x + h * y + 1.0
    return (a * x + b * y + c) / w, (d * x + e * y + f) / w


def make_generator(charset, fonts, lines=False, text_files=None, text_part="all", min_len=None,
                   max_len=None, words=None, kinds=None, language=None, **settings):
    """A :class:`SyntheticTextGenerator` of words (default) or whole printed lines.

    ``lines``: draw lines with :class:`~crnn_multigpu.datasets.lines.LineSampler` from
    ``text_files`` (default: the packaged prose), its ``text_part`` ("train", "heldout",
    "all"), ``kinds`` of line; lengths default to 1-10 for words, 1-60 for lines.
    ``language``: whose prose, words and punctuation lines are made of (default: English).
    ``settings`` (height, seed, difficulty, underline) go to the generator.
    """
    min_len = min_len or 1
    max_len = max_len or (60 if lines else 10)
    if not lines:
        return SyntheticTextGenerator(charset, fonts, min_len=min_len, max_len=max_len,
                                      words=words, kinds=kinds, **settings)
    from crnn_multigpu.datasets.lines import line_sampler
    texts = line_sampler(charset, min_len, max_len, texts=text_files, part=text_part, words=words,
                         kinds=kinds, language=language)
    return SyntheticTextGenerator(charset, fonts, min_len=min_len, max_len=max_len, texts=texts,
                                  lines=True, **settings)


def text_part_of(font_side):
    """The prose part that goes with a side of the font split: held-out fonts read held-out text."""
    return {"train": "train", "heldout": "heldout"}.get(font_side, "all")
