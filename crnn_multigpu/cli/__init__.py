"""Command-line entry points (crnn-generate, crnn-train, crnn-server, ...)."""
