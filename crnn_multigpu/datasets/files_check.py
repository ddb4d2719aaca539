"""What a path is, told before it is opened or decoded: a file manager or a shell hands over
folders, named pipes, devices, empty files and text named ``.png`` as readily as images, and
each gets one line naming it and the reason, before memory or time is spent on it.

:func:`regular_file` is asked before a file is opened (opening a FIFO waits for a writer for
ever); :func:`not_an_image` says what a file is that Pillow cannot identify. The image loader
(``datasets.images.open_image``) and the PDF reader (``datasets.pdf``) ask them; any loader of
inputs may.
"""
import errno
import os
import stat

# How many bytes of a file are looked at to say what it holds instead of an image.
SNIFF_BYTES = 64
_KINDS = (
    (stat.S_ISDIR, "it is a folder, not a file: pass the files in it (e.g. %s/*.png)"),
    (stat.S_ISFIFO, "it is a named pipe (FIFO), not a file: reading it would wait for whatever "
                    "writes into it; save what it carries to a file and pass that"),
    (stat.S_ISSOCK, "it is a socket, not a file"),
    (stat.S_ISCHR, "it is a device, not a file"),
    (stat.S_ISBLK, "it is a device, not a file"),
)


def regular_file(path, what="image"):
    """The size in bytes of the file ``path`` when it is a regular file with content that this
    user may read; otherwise a ValueError ``cannot read <what> <path>: <reason>``. Nothing is
    opened, so a FIFO or a device cannot block or flood the caller."""
    def refuse(reason):
        return ValueError("cannot read %s %s: %s" % (what, path, reason))
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise refuse(_broken_link(path) or "no such file (check the path)")
    except PermissionError:
        raise refuse("permission denied on its folder")
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise refuse("it is a symbolic link that leads round in a loop (%s): point it at "
                         "the file, or pass the file itself" % error.strerror)
        raise refuse(error.strerror or str(error))
    for test, reason in _KINDS:
        if test(status.st_mode):
            raise refuse(reason % path if "%s" in reason else reason)
    if not stat.S_ISREG(status.st_mode):
        raise refuse("it is not a regular file")
    if status.st_size == 0:
        raise refuse("it is empty (0 bytes): it was not written completely, or not copied")
    if not os.access(path, os.R_OK):
        raise refuse("permission denied: this user may not read it")
    return status.st_size


def _broken_link(path):
    """The reason for a symbolic link at ``path`` whose target does not exist, else None (a
    plain missing path): the user sees the link, so "no such file" alone misleads."""
    try:
        target = os.readlink(path)
    except OSError:
        return None
    return ("it is a symbolic link to %s, which does not exist: point it at the file, or pass "
            "the file itself" % target)


# The first bytes of formats Pillow reads: a file that begins so and is not identified is a
# damaged one of them (once told to convert a damaged TIFF to PNG or JPEG).
_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"II*\x00", "TIFF"),
               (b"MM\x00*", "TIFF"), (b"GIF8", "GIF"))


def not_an_image(path):
    """Why ``path``, a file Pillow could not identify, is not an image, from its first bytes:
    a PDF, text, or a format Pillow does not read (with the bytes it begins with)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(SNIFF_BYTES)
    except OSError as error:
        return error.strerror or str(error)
    if head.startswith(b"%PDF-"):
        return "it is a PDF document, not an image: read its pages with --page"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:  # a multi-byte character cut by the sniff is still text
        text = head[:error.start].decode("utf-8") if error.start >= len(head) - 3 else None
    if text is not None and text.strip() and all(char.isprintable() or char in "\t\r\n"
                                                 for char in text):
        return "it holds text, not an image (it begins %r)" % text.strip()[:32]
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return ("it begins as a %s file does, but Pillow cannot read it: it is damaged or cut "
                    "short; copy it again or save it anew" % kind)
    return ("its format is not one Pillow reads (it begins with bytes %s): convert it to PNG "
            "or JPEG" % " ".join("%02x" % byte for byte in head[:8]))
