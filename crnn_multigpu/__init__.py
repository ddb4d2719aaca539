"""crnn_multigpu: train a single-device TensorFlow graph-mode model on many devices."""
