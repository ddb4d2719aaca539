"""What drives a built wrapper: the training loop (``training``) and its learning-rate schedule
(``schedule``), checkpoints that survive faults (``checkpoints``), TensorFlow's cluster runtime
(``cluster``) and Horovod (``horovod``). A run folder's config.json is the OCR product's
(``ocr.run_config``)."""
