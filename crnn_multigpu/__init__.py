"""crnn_multigpu: train a single-device TensorFlow graph-mode model on many devices.

Public names: ``MultiGpuModel`` (the tower wrapper), its placement strategies
(``ParameterServer``, ``SpreadParameterServer``, ``Replicated``), ``CRNN``, ``Charset`` and the device helpers. They are imported on first use, so tools that need no TensorFlow
(``crnn-generate``) start without loading it.
"""
from crnn_multigpu.lazy import lazy_names

__version__ = "0.1.0"

_PUBLIC = {
    "MultiGpuModel": "crnn_multigpu.wrapper.towers",
    "ParameterServer": "crnn_multigpu.wrapper.strategies",
    "Replicated": "crnn_multigpu.wrapper.strategies",
    "SpreadParameterServer": "crnn_multigpu.wrapper.strategies",
    "CRNN": "crnn_multigpu.ocr.crnn",
    "Charset": "crnn_multigpu.datasets.charset",
    "cluster_devices": "crnn_multigpu.wrapper.devices",
    "cpu_devices": "crnn_multigpu.wrapper.devices",
    "session_config": "crnn_multigpu.wrapper.devices",
    "tower_devices": "crnn_multigpu.wrapper.devices",
    "visible_gpus": "crnn_multigpu.wrapper.devices",
    "split_batch": "crnn_multigpu.wrapper.sharding",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, extra=["__version__"])
