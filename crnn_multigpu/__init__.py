"""crnn_multigpu: train a single-device TensorFlow graph-mode model on many devices.

Public names: ``MultiGpuModel`` (the tower wrapper) and the device helpers.
The OCR model and data tools live in ``crnn_multigpu.crnn``,
``crnn_multigpu.charset`` and ``crnn_multigpu.datasets``.
"""
from crnn_multigpu.devices import (cluster_devices, cpu_devices, session_config,  # noqa: F401
                                   tower_devices, visible_gpus)
from crnn_multigpu.sharding import split_batch  # noqa: F401
from crnn_multigpu.towers import MultiGpuModel  # noqa: F401

__version__ = "0.1.0"
