"""What drives a built wrapper: the training loop (``training``) and its learning-rate schedule
(``schedule``), checkpoints that survive faults (``checkpoints``), the run folder's config.json
(``run_config``), TensorFlow's cluster runtime (``cluster``) and Horovod (``horovod``)."""
