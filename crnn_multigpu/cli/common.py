"""What every command-line tool shares: logging set-up, one-line errors instead of tracebacks,
and the argument parser with range-checked numeric types (every numeric flag is checked here,
once, with a message naming the flag)."""
import argparse
import json
import logging
import math
import os
import re
import sys

from crnn_multigpu import tflog

# Errors a user can fix from the message alone: printed as one line, exit code 2.
USER_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, PermissionError, OSError,
               TypeError, ImportError)


def setup_logging(verbose=False):
    """Log to stderr: INFO for our own package, warnings for everything else.

    ``verbose`` also shows TensorFlow's start-up log, which every tool otherwise keeps off
    stderr (``crnn_multigpu.tflog``; a user's own ``TF_CPP_MIN_LOG_LEVEL`` is honoured):
    what was held back if TensorFlow is already imported, everything if it is imported later.
    """
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("crnn_multigpu").setLevel(logging.DEBUG if verbose else logging.INFO)
    if verbose:
        tflog.show_startup_log()


def print_figures(figures):
    """A tool's result on stdout: one JSON line with sorted keys, for scripts to parse."""
    print(json.dumps(figures, sort_keys=True))
    sys.stdout.flush()


def console_entry(body, tool):
    """The console entry point ``main(argv=None) -> exit code`` of ``tool`` doing ``body(argv)``.

    User errors become one ``error: ...`` line on stderr and exit code 2 (set
    ``CRNN_TRACEBACK=1`` for the full traceback); argparse's own exits (``--help``) become the
    returned code, so an in-process caller gets a code rather than SystemExit.
    """
    def main(argv=None):
        try:
            return body(argv) or 0
        except SystemExit as exit_request:
            return exit_request.code if isinstance(exit_request.code, int) else 2
        except KeyboardInterrupt:
            # Ctrl-C outside a training loop (which saves and exits 130 itself): no traceback.
            sys.stderr.write("interrupted\n")
            return 130
        except Exception as error:
            if os.environ.get("CRNN_TRACEBACK") or not (
                    isinstance(error, USER_ERRORS) or getattr(error, "user_facing", False)):
                raise
            message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            sys.stderr.write("error: %s\n" % message)
            sys.stderr.flush()
            return 2
    main.__doc__ = "Console entry point of %s; returns the exit code (2 on a user error)." % tool
    return main


class UsageError(ValueError):
    """A malformed command line (raised by ``ArgumentParser.error``): one line, exit code 2."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse without the usage block on errors: ``error: --steps must be ...``, exit 2.

    ``error`` raises UsageError, which ``console_entry`` prints as one line; ``--help`` is unchanged.
    """

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)  # for error()'s advice
        return super(ArgumentParser, self).parse_known_args(args, namespace)

    def error(self, message):
        dashed = [arg for arg in getattr(self, "_given", [])
                  if arg.startswith("-") and arg != "-" and os.path.exists(arg)
                  and arg.split("=")[0] not in self._option_string_actions]
        if dashed:
            # argparse takes a file named "-scan.png" for an option and says only that the
            # images are missing, or that it does not know the option.
            raise UsageError("%s is a file, but begins with '-' as an option does: pass it as "
                             "./%s, or after -- (-- %s)" % (dashed[0], dashed[0], dashed[0]))
        # "argument --steps: must be at least 1, got 0" -> "--steps must be at least 1, got 0"
        match = re.match(r"argument (\S+?)(?:/(\S+))?: (.*)$", message, re.S)
        if match:
            flag = match.group(2) or match.group(1)
            rest = match.group(3)
            message = "%s %s" % (flag, rest) if rest.startswith("must") else "%s: %s" % (flag, rest)
        raise UsageError(message)


def _number(kind, text):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError("must be %s, got %r"
                                         % ("a whole number" if kind is int else "a number", text))
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError("must be a finite number, got %r" % text)
    return value


# Counts and steps become int64 tensors; past 2**53 they are no longer exact as floats either.
LARGEST_WHOLE_NUMBER = 2 ** 53


def int_at_least(minimum):
    """An argparse type: a whole number >= ``minimum`` (and at most 2**53)."""
    def parse(text):
        value = _number(int, text)
        if value < minimum:
            raise argparse.ArgumentTypeError("must be at least %d, got %d" % (minimum, value))
        if value > LARGEST_WHOLE_NUMBER:
            raise argparse.ArgumentTypeError("must be at most %d, got %s"
                                             % (LARGEST_WHOLE_NUMBER, text))
        return value
    parse.__name__ = "int"
    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def int_range(low, high):
    """An argparse type: a whole number in [low, high], the range named in the message."""
    def parse(text):
        value = _number(int, text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError("must be in [%d, %d], got %s" % (low, high, text))
        return value
    parse.__name__ = "int"
    return parse


def float_range(low, high=None, low_open=False, high_open=False, noun=None):
    """An argparse type: a finite float in [low, high] (ends excluded when ``*_open``).

    ``noun`` names what the number is in the message ("must be a strength in [0, 1]").
    """
    def parse(text):
        value = _number(float, text)
        too_low = value <= low if low_open else value < low
        too_high = high is not None and (value >= high if high_open else value > high)
        if too_low or too_high:
            if high is None:
                bound = "greater than %g" % low if low_open else "at least %g" % low
            else:
                bound = "%sin %s%g, %g%s" % (noun + " " if noun else "",
                                             "(" if low_open else "[", low, high,
                                             ")" if high_open else "]")
            raise argparse.ArgumentTypeError("must be %s, got %s" % (bound, text))
        return value
    parse.__name__ = "float"
    return parse


positive_float = float_range(0.0, low_open=True)
non_negative_float = float_range(0.0)
unit_float = float_range(0.0, 1.0)


# How many unreadable images a tool names before it only counts the rest.
NAMED_UNREADABLE = 3


def report_unreadable(names, total, source):
    """Name on stderr the images of ``source`` (a dataset path) that could not be read: up to
    NAMED_UNREADABLE, then a count, in one line; a second line warns when they are more than
    half of its ``total`` images, whose figures then mostly measure the missing files."""
    if not names:
        return
    listed = ", ".join(names[:NAMED_UNREADABLE]) + (
        " and %d more" % (len(names) - NAMED_UNREADABLE) if len(names) > NAMED_UNREADABLE
        else "")
    sys.stderr.write("note: %d of the %d images of %s could not be read and count as wrong, "
                     "empty readings: %s (--verbose says why)\n"
                     % (len(names), total, source, listed))
    if 2 * len(names) > total:
        sys.stderr.write("warning: most images of %s could not be read (%d of %d): its figures "
                         "measure the missing files more than the model; check the files, and "
                         "that the paths in its labels are relative to its folder\n"
                         % (source, len(names), total))
    sys.stderr.flush()


def existing_folder(text):
    """An argparse type: a path that is a folder."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError("must be an existing folder, got %r" % text)
    return text


def nearest_existing(path):
    """``path`` or the nearest folder above it that exists ("" when none of a relative path
    does)."""
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def output_folder(text):
    """An argparse type: a folder to write into, new or existing (every tool's ``--out``).
    Refused when it, or the nearest part of its path that exists, is a file: creating it
    would fail later with 'Not a directory' or 'File exists'."""
    existing = nearest_existing(text.rstrip(os.sep) or text)
    if existing and not os.path.isdir(existing):
        raise argparse.ArgumentTypeError(
            "must name a folder, but %s%s is a file: pass a folder (new or existing)"
            % (existing, "" if existing == text.rstrip(os.sep) else " (in %s)" % text))
    return text


def add_font_arguments(parser):
    """--font-dir and --holdout-fraction: where the typefaces are, and the share of families
    the deterministic train/held-out split keeps apart (crnn-generate and the main job)."""
    parser.add_argument("--font-dir", action="append", metavar="DIR", type=existing_folder,
                        help="folder searched recursively for .ttf/.otf/.pfb/.woff fonts; "
                             "repeatable (default: $CRNN_FONT_DIRS or the system font folders)")
    parser.add_argument("--holdout-fraction", type=float_range(0.0, 1.0, high_open=True),
                        default=0.2,
                        help="share of font families held out by the split (default: %(default)s)")


def check_output_file(path, flag, overwrite):
    """Raise an OSError, one line naming ``path`` (the value of ``flag``) and what to do, when a
    tool could not write its output file there: checked before the reading work rather than
    found after it. Refused: an existing file unless ``overwrite`` (an output never replaces a
    file, maybe one of the inputs, unless asked), a folder, and a path whose folder does not
    exist, is a file or may not be written into."""
    if not path:
        return
    if os.path.isdir(path):
        raise IsADirectoryError("%s %s is a folder: name a file in it (e.g. %s)"
                                % (flag, path, os.path.join(path, "picture.png")))
    if os.path.exists(path) and not overwrite:
        raise FileExistsError("%s %s already exists; choose another file or pass --overwrite"
                              % (flag, path))
    folder = os.path.dirname(path) or os.curdir
    if not os.path.isdir(folder):
        existing = nearest_existing(folder)
        if existing and not os.path.isdir(existing):  # a file lies on its path
            raise NotADirectoryError("%s %s cannot be written: %s is a file, not a folder; "
                                     "choose a file in a folder" % (flag, path, existing))
        raise FileNotFoundError("%s %s cannot be written: its folder %s does not exist; create "
                                "it first (mkdir -p %s) or choose a file in an existing folder"
                                % (flag, path, folder, folder))
    if not os.access(folder, os.W_OK):
        raise PermissionError("%s %s cannot be written: permission denied in its folder %s; "
                              "choose a file in a folder you may write" % (flag, path, folder))


def add_model_class_argument(parser, training=False):
    """--model-class MODULE:CLASS, for every tool that builds a model (``chosen_model_class``
    reads it)."""
    parser.add_argument(
        "--model-class", metavar="MODULE:CLASS",
        help="the model class to train, e.g. mypackage.models:MyRecognizer (default: CRNN, "
             "crnn_multigpu.ocr.crnn:CRNN); recorded in the run's config.json. What it needs: "
             "crnn_multigpu.ocr.model_class" if training else
             "the model class to read the run with (default: the one its config.json names, "
             "else CRNN); only needed when that class moved")


def chosen_model_class(args):
    """The class ``--model-class`` names, imported and checked (``ocr.model_class.chosen``), or
    None without the flag. ValueError, one line naming the value and the problem, otherwise."""
    from crnn_multigpu.ocr.model_class import chosen
    return chosen(args.model_class)
