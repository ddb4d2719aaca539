"""Count a language's character model and write the file its description ships.

The counts come from the training part of the language's prose (the held-out tenth stays
unseen, as for the line generator) and, where the description's ``char_lm`` says ``words``,
its word list weighted by frequency; the file is the description's ``char_lm.counts``, beside
it in ``crnn_multigpu/datasets/languages/``. Needs the prose sources the description names
(for Chinese: ``scripts/install_system_packages.sh --chinese`` and ``pip install jieba``)::

    .venv/bin/python scripts/build_char_lm.py --language zh     # about 1 minute
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets.language import get_language, language_names  # noqa: E402
from crnn_multigpu.ocr.char_lm import prose_language_model  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", required=True, choices=language_names())
    args = parser.parse_args(argv)
    language = get_language(args.language)
    path = language.char_lm_counts_path()
    if path is None:
        sys.stderr.write("error: %s.json names no char_lm counts file to write\n" % language.name)
        return 2
    started = time.time()
    model = prose_language_model(language.charset, language.char_lm["order"], language=language)
    model.save(path)
    print("wrote %s: %d contexts, %.1f MB, in %.0f s"
          % (path, model.context_count, os.path.getsize(path) / 1e6, time.time() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
