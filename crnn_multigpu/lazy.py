"""Public names imported on first use, so that importing a package loads no TensorFlow until a
name that needs it is asked for (``crnn_multigpu.MultiGpuModel``,
``crnn_multigpu.ocr.TrainingRun``)."""
import importlib


def lazy_names(package, public):
    """``(__getattr__, __dir__)`` for the package named ``package`` whose public names are the
    keys of ``public``, each imported from the module its value names when first asked for."""
    names = sorted(public)

    def __getattr__(name):
        if name in public:
            return getattr(importlib.import_module(public[name]), name)
        raise AttributeError("module %r has no attribute %r" % (package, name))

    def __dir__():
        return list(names)

    return __getattr__, __dir__
