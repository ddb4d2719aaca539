"""The fixtures of scripts/adversarial_pass.py: the files a phone, a scanner, a shell or a file
manager hands over, made deterministically (fixed text, the DejaVu font) in a folder."""
import os
import shutil
import struct
import subprocess
import zlib

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PAGE_TEXT = ["The quick brown fox jumps", "over the lazy dog while", "seven wizards quickly",
             "judge the boxing match", "and pack my box with", "five dozen liquor jugs"]


def line_image(text, size=32):
    """A crop of one line of ``text``, black on white, ``size`` px letters."""
    font = ImageFont.truetype(FONT, size)
    left, top, right, bottom = font.getbbox(text)
    image = Image.new("L", (right + 24, bottom + 20), 255)
    ImageDraw.Draw(image).text((12, 10), text, fill=0, font=font)
    return image


def page_image(lines=PAGE_TEXT):
    """A page of ``lines`` at about 150 dpi, black on white."""
    font = ImageFont.truetype(FONT, 30)
    image = Image.new("L", (1240, 900), 255)
    draw = ImageDraw.Draw(image)
    for index, text in enumerate(lines):
        draw.text((100, 100 + 60 * index), text, fill=0, font=font)
    return image


def png_header_only(path, width, height):
    """A PNG that declares width x height pixels and holds none (a decompression bomb's header)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def fixtures(root):
    """Make every file the cases hand over, in ``root``; returns a dict name -> path."""
    f = {}

    def path(name):
        f[name] = os.path.join(root, name)
        return f[name]

    hello = line_image("hello world")
    hello.save(path("hello.png"))
    line_image("quick brown fox").save(path("fox.png"))
    hello.convert("RGB").save(path("hello.jpg"), quality=95)
    hello.convert("CMYK").save(path("cmyk.jpg"), quality=95)
    Image.fromarray((np.asarray(hello).astype("uint16") * 257)).save(
        path("sixteen.png"))
    hello.convert("P").save(path("palette.png"))
    # Transparent where the paper is, with black colour under the transparency: a viewer
    # shows black text on its own backdrop.
    alpha = Image.new("RGBA", hello.size, (0, 0, 0, 0))
    alpha.putalpha(hello.point(lambda v: 255 - v))
    alpha.save(path("alpha.png"))
    # A phone's photo: stored sideways, with the EXIF orientation that turns it upright.
    exif = Image.Exif()
    exif[0x0112] = 6
    hello.convert("RGB").transpose(Image.Transpose.ROTATE_90).save(
        path("exif6.jpg"), exif=exif.tobytes(), quality=95)
    page = page_image()
    page.convert("RGB").transpose(Image.Transpose.ROTATE_90).save(
        path("exif6_page.jpg"), exif=exif.tobytes(), quality=95)
    page.save(path("page.png"))
    Image.new("L", (1, 1), 255).save(path("onepx.png"))
    Image.new("L", (1, 48), 255).save(path("onewide.png"))
    Image.new("L", (1200, 1), 255).save(path("flat_page.png"))
    png_header_only(path("bomb.png"), 30000, 30000)
    line_image("a very long line " * 60, size=32).save(path("wide_line.png"))
    data = open(f["hello.png"], "rb").read()
    open(path("truncated.png"), "wb").write(data[:len(data) // 2])
    data = open(f["hello.jpg"], "rb").read()
    open(path("truncated.jpg"), "wb").write(data[:len(data) // 2])
    open(path("corrupt.tif"), "wb").write(b"II*\0" + b"\x08\0\0\0" + b"\xff" * 64)
    page.save(path("doc.pdf"), save_all=True, resolution=150,
              append_images=[page_image(PAGE_TEXT[::-1])])
    data = open(f["doc.pdf"], "rb").read()
    open(path("truncated.pdf"), "wb").write(data[:len(data) // 3])
    subprocess.run(["qpdf", "--encrypt", "user", "owner", "256", "--", f["doc.pdf"],
                    path("locked.pdf")], check=True)
    page.save(path("multi.tif"), save_all=True, append_images=[page_image(PAGE_TEXT[::-1])])
    open(path("empty.png"), "wb").close()
    open(path("text.png"), "w").write("hello world, not an image\n")
    shutil.copy(f["doc.pdf"], path("pdf_named.png"))
    os.mkdir(path("folder"))
    os.mkfifo(path("fifo.png"))
    os.symlink(os.path.join(root, "loop_b.png"), path("loop_a.png"))
    os.symlink(f["loop_a.png"], path("loop_b.png"))
    os.symlink(os.path.join(root, "moved.png"), path("link.png"))
    shutil.copy(f["hello.png"], path("tab\tname.png"))
    shutil.copy(f["hello.png"], path("new\nline.png"))
    shutil.copy(f["hello.png"], path("-dash.png"))
    bad = os.path.join(os.fsencode(root), b"bad\xe9name.png")
    shutil.copy(f["hello.png"], bad)
    f["bad_utf8"] = os.fsdecode(bad)
    open(path("existing.pdf"), "wb").write(b"keep me")
    # ONNX exports: one byte of a weight changed, and one cut short.
    onnx = os.path.join(shipped_folder("text"), "model.onnx")
    data = bytearray(open(onnx, "rb").read())
    data[len(data) // 2] ^= 0x55
    os.mkdir(path("onnx_damaged"))
    open(os.path.join(f["onnx_damaged"], "model.onnx"), "wb").write(bytes(data))
    os.mkdir(path("onnx_short"))
    open(os.path.join(f["onnx_short"], "model.onnx"), "wb").write(bytes(data[:len(data) // 2]))
    # Label files as editors write them.
    for name, text in LABEL_FILES.items():
        folder = path("labels_" + name)
        os.mkdir(folder)
        shutil.copy(f["hello.png"], os.path.join(folder, "hello.png"))
        shutil.copy(f["fox.png"], os.path.join(folder, "fox.png"))
        open(os.path.join(folder, "labels.txt"), "wb").write(text)
    # A run to resume: the shipped text model's folder.
    shutil.copytree(shipped_folder("text"), path("run_copy"))
    return f


LABEL_FILES = {
    "good": b"hello.png\thello world\nfox.png\tquick brown fox\n",
    "extra_column": b"hello.png\thello world\t0.9\nfox.png\tquick brown fox\t0.8\n",
    "padded": b"hello.png \t hello world \nfox.png\t quick brown fox\n",
    "empty_label": b"hello.png\t\nfox.png\tquick brown fox\n",
    "no_tab": b"hello.png hello world\nfox.png quick brown fox\n",
    "crlf": b"hello.png\thello world\r\nfox.png\tquick brown fox\r\n",
    "bom": b"\xef\xbb\xbfhello.png\thello world\nfox.png\tquick brown fox\n",
    "latin1": b"hello.png\thell\xe9 world\nfox.png\tquick brown fox\n",
    "missing_image": b"hello.png\thello world\nnone.png\tquick brown fox\n",
    "empty_file": b"",
    "blank_lines": b"\n\nhello.png\thello world\n\nfox.png\tquick brown fox\n\n",
}


def shipped_folder(name):
    """The folder of the shipped model ``name`` (its run, and its model.onnx)."""
    import crnn_multigpu.models
    return os.path.join(os.path.dirname(crnn_multigpu.models.__file__), name)
