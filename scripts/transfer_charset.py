"""Move a trained model onto another charset (crnn_multigpu.ocr.charset_transfer): its weights
kept, its output classes mapped by character, for crnn-train --init-from.

    python scripts/transfer_charset.py models/text --language latin --out resume/latin-init
"""
import argparse
import sys

from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.ocr.charset_transfer import transfer_to_charset


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="run folder or model folder (e.g. models/text)")
    parser.add_argument("--language", required=True, help="described language whose charset to take")
    parser.add_argument("--out", required=True, help="new folder for the moved model")
    args = parser.parse_args(argv)
    try:
        language = get_language(args.language)
        transfer_to_charset(args.run, language.charset, args.out, language=language.name)
    except (OSError, ValueError) as error:
        print("error: %s" % error, file=sys.stderr)
        return 2
    print("%s on the %s charset (%d characters) -> %s"
          % (args.run, language.title, len(language.charset), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
