"""Public names of a package imported on first use (PEP 562), so that importing the package
loads none of the modules that define them (TensorFlow among them)."""
import importlib


def lazy_names(package, public, extra=()):
    """``(__getattr__, __dir__)`` for the package named ``package``: each name of ``public``
    (name -> module defining it) is imported from its module when first asked for; ``__dir__``
    lists them and ``extra``."""
    def __getattr__(name):
        if name in public:
            return getattr(importlib.import_module(public[name]), name)
        raise AttributeError("module %r has no attribute %r" % (package, name))

    def __dir__():
        return sorted(public) + list(extra)
    return __getattr__, __dir__
