"""Files that are not what they claim (issue 54.4): whatever a shell or a file manager hands
over (folders, named pipes, devices, empty files, text named .png, PDFs locked or cut short,
a page too large to draw) is named with its reason in one line, before it is decoded or
drawn; Pillow's raw DecompressionBombWarning never reaches the user."""
import os
import subprocess
import threading
import warnings

import pytest
from PIL import Image

from assertions import run_tool
from crnn_multigpu.cli import predict
from crnn_multigpu.datasets import load_image, pdf
from crnn_multigpu.datasets.files_check import regular_file
from crnn_multigpu.datasets.images import MAX_PIXELS_ENV, grey_page


def minimal_pdf(path, media_box=(612, 792), locked=False):
    """A one-page PDF without content, ``media_box`` points large; ``locked``: encrypted with a
    user password (the standard handler, revision 2), which poppler cannot open without it."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] >>" % media_box]
    trailer = b""
    if locked:  # an /U entry no empty password gives
        objects.append(b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P -4 >>"
                       % (b"11" * 32, b"22" * 32))
        trailer = b"/Encrypt 4 0 R /ID [<%s> <%s>] " % (b"0f" * 16, b"0f" * 16)
    data, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, trailer, xref)
    with open(path, "wb") as stream:
        stream.write(data)
    return path


class Fifo(object):
    """A named pipe with a writer waiting to hand an image to every reader that opens it: a
    loader that opens it gets the image (a test then fails on what it read, not by hanging)."""

    def __init__(self, path, payload):
        self.path, self.payload, self.stopped = path, payload, threading.Event()
        self.opened = 0
        os.mkfifo(path)
        self.writer = threading.Thread(target=self._serve, daemon=True)
        self.writer.start()

    def _serve(self):
        self.opened = 0  # by readers: counted before the payload is written, so before it is read
        while not self.stopped.is_set():
            with open(self.path, "wb") as stream:  # blocks until a reader opens it
                if not self.stopped.is_set():
                    self.opened += 1
                    stream.write(self.payload)

    def close(self):
        """Stop the writer: release its waiting open by opening the reading end without
        waiting, then close it."""
        self.stopped.set()
        descriptor = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self.writer.join()
        os.close(descriptor)


@pytest.fixture
def word(tmp_path):
    path = str(tmp_path / "word.png")
    Image.new("L", (60, 32), 255).save(path)
    return path


@pytest.fixture
def pipe(tmp_path, word):
    with open(word, "rb") as stream:
        served = Fifo(str(tmp_path / "pipe.png"), stream.read())
    yield served
    served.close()


@pytest.fixture
def fifo(pipe):
    return pipe.path


def things(tmp_path):
    """``{path: reason}`` of what is not an image, each made in ``tmp_path``."""
    folder = tmp_path / "scans"
    folder.mkdir()
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "notes.png").write_text("hello world, not an image\n")
    (tmp_path / "blob.png").write_bytes(bytes(range(7, 70)))
    minimal_pdf(str(tmp_path / "document.png"))
    (tmp_path / "scan.tif").write_bytes(b"II*\x00\x08\x00\x00\x00" + b"\xff" * 64)
    os.symlink(str(tmp_path / "loop_b.png"), str(tmp_path / "loop_a.png"))
    os.symlink(str(tmp_path / "loop_a.png"), str(tmp_path / "loop_b.png"))
    os.symlink(str(tmp_path / "moved.png"), str(tmp_path / "link.png"))
    Image.new("L", (300, 200), 128).save(str(tmp_path / "cut.png"))
    with open(str(tmp_path / "cut.png"), "r+b") as stream:
        stream.truncate(100)
    return {str(folder): "it is a folder, not a file: pass the files in it (e.g. %s/*.png)"
            % folder,
            str(tmp_path / "empty.png"): "it is empty (0 bytes)",
            str(tmp_path / "notes.png"): "it holds text, not an image (it begins 'hello world, "
                                         "not an image')",
            str(tmp_path / "blob.png"): "its format is not one Pillow reads (it begins with "
                                        "bytes 07 08 09 0a 0b 0c 0d 0e)",
            str(tmp_path / "document.png"): "it is a PDF document, not an image: read its pages "
                                            "with --page",
            str(tmp_path / "missing.png"): "no such file",
            str(tmp_path / "loop_a.png"): "it is a symbolic link that leads round in a loop (",
            str(tmp_path / "link.png"): "it is a symbolic link to %s, which does not exist: "
                                        "point it at the file" % (tmp_path / "moved.png"),
            # A damaged file of a format Pillow reads is called damaged, not a format to convert.
            str(tmp_path / "scan.tif"): "it begins as a TIFF file does, but Pillow cannot read "
                                        "it: it is damaged or cut short; copy it again",
            str(tmp_path / "cut.png"): "it is damaged or cut short (Pillow: ",
            os.devnull: "it is a device, not a file"}


def test_each_thing_that_is_not_an_image_is_named_with_its_reason(tmp_path, fifo, recwarn):
    cases = dict(things(tmp_path), **{fifo: "it is a named pipe (FIFO), not a file"})
    for path, reason in cases.items():
        for load in (load_image, grey_page):
            with pytest.raises(ValueError) as refused:
                load(path)
            assert str(refused.value).startswith("cannot read image %s: %s" % (path, reason))
    # The one line says it: Pillow's raw warnings (Corrupt EXIF data, of the damaged TIFF)
    # would reach the user as lines of its source.
    assert [str(w.message) for w in recwarn if "PIL" in w.filename] == []
    assert not pdf.is_pdf(fifo) and not pdf.is_pdf(str(tmp_path / "scans"))
    assert regular_file(str(tmp_path / "notes.png")) == 26


def test_crnn_predict_skips_each_with_its_reason_and_reads_the_rest(tmp_path, pipe, word):
    fifo = pipe.path
    cases = dict(things(tmp_path), **{fifo: "it is a named pipe (FIFO), not a file"})
    del cases[str(tmp_path / "document.png")]  # a PDF is pointed to --page (test_predict_pdf)
    code, out, err = run_tool(predict.main, sorted(cases) + [word])
    assert out.startswith(word + "\t") and out.count("\n") == 1, out
    for path, reason in cases.items():
        assert "skipped: %s: %s" % (path, reason) in err, err
    assert "Traceback" not in err
    # Never opened: without a writer, an open (once to count a TIFF's frames) waits for ever.
    assert pipe.opened == 0


def test_a_pdf_locked_or_cut_short_is_named_with_its_reason(tmp_path):
    locked = minimal_pdf(str(tmp_path / "locked.pdf"), locked=True)
    cut = minimal_pdf(str(tmp_path / "cut.pdf"))
    with open(cut, "rb") as stream:
        data = stream.read()
    with open(cut, "wb") as stream:
        stream.write(data[:len(data) // 2])
    assert pdf.page_count(minimal_pdf(str(tmp_path / "fine.pdf"))) == 1
    with pytest.raises(ValueError, match=r"^cannot read PDF %s: it is locked by a password; save "
                                         r"a copy without it" % locked):
        pdf.page_count(locked)
    with pytest.raises(ValueError, match=r"^cannot read PDF %s: it is damaged or cut short "
                                         r"\(poppler: .+\); copy it again" % cut):
        pdf.page_count(cut)


def test_a_page_too_large_is_refused_before_it_is_drawn(tmp_path, monkeypatch):
    huge = minimal_pdf(str(tmp_path / "huge.pdf"), media_box=(14400, 14400))
    large = minimal_pdf(str(tmp_path / "large.pdf"), media_box=(2000, 2000))
    drawn = []
    run = subprocess.run

    def recorded(arguments, **options):
        drawn.extend(arguments[:1])
        return run(arguments, **options)
    monkeypatch.setattr(pdf.subprocess, "run", recorded)
    with pytest.raises(ValueError) as refused:
        pdf.render_page(huge, 1, 150)
    assert str(refused.value) == (
        "cannot read page %s#page=1: it is 14400 x 14400 pt, 30000 x 30000 pixels at 150 dpi "
        "(900.0 M), more than the 89.5 M an image may have here; raise the limit with $%s="
        "PIXELS" % (huge, MAX_PIXELS_ENV))
    with pytest.raises(ValueError, match=r"#page=1: it is 2000 x 2000 pt, 16667 x 16667 pixels "
                                         r"at 600 dpi .*draw it at --dpi 340 or less, or raise"):
        pdf.render_page(large, 1, 600)
    assert "pdftoppm" not in drawn and drawn.count("pdfinfo") == 2
    assert pdf.render_page(large, 1, 300).size == (8334, 8334)  # 69.4 M pixels: drawn


def test_crnn_predict_names_the_page_too_large(tmp_path):
    huge = minimal_pdf(str(tmp_path / "huge.pdf"), media_box=(14400, 14400))
    code, out, err = run_tool(predict.main, ["--page", huge])
    assert code == 1 and "skipped: %s#page=1: it is 14400 x 14400 pt" % huge in err
    assert "bytes in memory" not in err and "Traceback" not in err


def test_pillows_decompression_warning_never_reaches_the_user(tmp_path, monkeypatch, word):
    big = str(tmp_path / "big.png")
    Image.new("L", (300, 40), 255).save(big)  # 12,000 pixels: between one and two limits
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 8000)
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        with pytest.raises(ValueError) as refused:
            load_image(big)
        load_image(word)
    assert str(refused.value) == (
        "cannot read image %s: it has 0.0 M pixels, more than the 0.0 M an image may have here "
        "(a decompression bomb, or a scan larger than reading needs); if it is genuine, raise "
        "the limit with $%s=PIXELS" % (big, MAX_PIXELS_ENV))
    assert [str(w.message) for w in heard if issubclass(w.category, Image.DecompressionBombWarning)] == []
    code, out, err = run_tool(predict.main, [big, word])
    assert "DecompressionBombWarning" not in err and "skipped: %s: it has" % big in err
    assert out.startswith(word + "\t")
