"""What drives a built wrapper: the training loop (``training``), checkpoints that survive
faults (``checkpoints``), TensorFlow's cluster runtime (``cluster``) and Horovod (``horovod``)."""
