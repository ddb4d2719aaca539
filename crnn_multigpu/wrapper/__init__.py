"""The library a user imports: one tower per device around a single-device model.

``towers.MultiGpuModel`` builds the towers (``tower_builder``, ``tower_context``, ``function_style``
for model functions), places and shares the variables (``strategies``, ``devices``), splits the
batch (``sharding``), feeds the towers from a step source through an input object (``feeding``:
fed or feed-free), combines the gradients (``gradients``, ``accumulation``) and keeps the number
formats (``precision``, ``layers``). Nothing here imports the runtime, the OCR or the datasets.
"""
