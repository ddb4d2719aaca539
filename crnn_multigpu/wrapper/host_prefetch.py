"""Items of an iterable computed ahead on a thread: how batches reach a ``feed_dict``.

Imports no TensorFlow, so the datasets (which do not load it) batch ahead with it too.
"""
import queue
import threading

_ITEM, _DONE, _FAILED = "item", "done", "failed"


def prefetch(iterable, depth=4):
    """Yield the items of ``iterable``, computed ahead on a daemon thread.

    At most ``depth`` items wait in the queue. An exception in the producer is
    re-raised in the consumer. The thread starts on the first ``next()``;
    closing the generator (or dropping it) stops the thread after its current
    item.
    """
    items = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(message):
        while not stop.is_set():
            try:
                items.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in iterable:
                if not put((_ITEM, item)):
                    return
            put((_DONE, None))
        except BaseException as error:  # handed to the consumer, which re-raises it
            put((_FAILED, error))

    worker = threading.Thread(target=produce, name="crnn-batch-prefetch")
    # A daemon thread cannot keep the interpreter alive if the consumer is leaked.
    worker.daemon = True
    worker.start()
    try:
        while True:
            kind, payload = items.get()
            if kind == _DONE:
                return
            if kind == _FAILED:
                raise payload
            yield payload
    finally:
        stop.set()
        worker.join(timeout=30)
