"""The TensorFlow side of ``peer_benchmark.py``: the CRNN's sizes, and its training and inference
timed, in a process of its own run by the interpreter of each TF venv (TF 2.x or 1.15).

``--spec REFERENCE --charset NAME`` builds the ``small`` CRNN with the output layer of the
charset NAME (``words``: digits and lower case, 37 classes with the CTC blank; ``zh``: the
Chinese charset, 6,900) and emits its sizes and trainable parameter count; it also writes to
REFERENCE (.npz) its initial weights and its logits and loss on a small batch, which the PyTorch
twin must reproduce (``torch_twin.py --check``). Without ``--spec`` it trains and runs
``MultiGpuModel(CRNN)`` with ``--classes`` outputs on ``--towers`` virtual CPUs over the batches
of ``--data`` and emits the figures (``peer_benchmark.measure``). TensorFlow is imported inside
the functions only: ``peer_benchmark.py``'s parent process stays light.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peer_benchmark import (MAX_LABEL, add_timing_arguments, emit, load_data,  # noqa: E402
                            measure)


def charset_of(name):
    """The :class:`~crnn_multigpu.datasets.charset.Charset` of ``name``: ``words`` (digits and
    lower case, the CRNN paper's) or ``zh`` (the Chinese language's)."""
    if name == "zh":
        from crnn_multigpu.datasets.language import get_language
        return get_language("zh").charset
    from crnn_multigpu.datasets.charset import Charset
    return Charset.default()


def trainable_parameter_count(graph):
    """Number of scalars in the trainable variables of ``graph`` (shapes must be static)."""
    variables = graph.get_collection("trainable_variables")
    return int(sum(int(np.prod(v.shape.as_list())) for v in variables))


def tf_spec(reference=None, seed=0, charset="words"):
    """The ``small`` model with the output layer of ``charset`` (a name of :func:`charset_of`)
    as built by TensorFlow: its sizes and trainable parameter count.

    ``reference``: also write there (.npz) the initial weights (``w:<variable name>``), a small
    batch and the model's logits and loss on it in inference and training mode, for the twin
    to reproduce with the same weights (``torch_twin.py --check``).
    """
    from crnn_multigpu.compat import TF_VERSION, tf
    from crnn_multigpu.datasets.batching import Batch
    from crnn_multigpu.ocr.crnn import CRNN
    classes = charset_of(charset).num_classes  # its characters + the CTC blank
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = CRNN(num_classes=classes)
        init = tf.global_variables_initializer()
    spec = {"charset": charset, "classes": model.num_classes, "channels": list(model.channels),
            "lstm_units": model.lstm_units, "lstm_layers": model.lstm_layers,
            "height": model.height, "params": trainable_parameter_count(graph),
            "tensorflow": ".".join(map(str, TF_VERSION))}
    if reference:
        rng = np.random.RandomState(seed + 1)
        images = rng.rand(8, model.height, 100).astype(np.float32)
        lengths = rng.randint(1, MAX_LABEL + 1, size=8).astype(np.int32)
        labels = rng.randint(0, classes - 1, size=(8, MAX_LABEL)).astype(np.int32)
        labels[np.arange(MAX_LABEL)[None, :] >= lengths[:, None]] = 0
        batch = Batch(images[..., None], np.full([8], 100, np.int32), labels, lengths, None)
        out = {"images": images, "labels": labels, "lengths": lengths}
        with tf.Session(graph=graph) as session:
            session.run(init)
            for training in (False, True):
                logits, loss = session.run([model.logits, model.loss],
                                           model.feed_dict(batch, training=training))
                out["logits_%d" % training], out["loss_%d" % training] = logits, loss
            for variable in graph.get_collection("trainable_variables"):
                out["w:" + variable.op.name] = session.run(variable)
        np.savez(reference, **out)
    return spec


def tf_worker(args):
    """Train and run MultiGpuModel(CRNN) on ``args.towers`` virtual CPUs; the figures."""
    from crnn_multigpu.compat import TF_VERSION, tf
    from crnn_multigpu.datasets.batching import Batch
    from crnn_multigpu.ocr.crnn import CRNN
    from crnn_multigpu.wrapper.devices import close_session, cpu_devices, session_config
    from crnn_multigpu.wrapper.towers import MultiGpuModel

    data = load_data(args.data)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(args.seed)
        model = MultiGpuModel(CRNN, devices=cpu_devices(args.towers), num_classes=args.classes,
                              xla=args.xla)
        frames = []
        for device, tower in zip(model.devices, model.models):
            with tf.device(device):  # the greedy path, on the tower that computed it
                frames.append(tf.argmax(tower.log_probs_per_frame, axis=-1))
        init = tf.global_variables_initializer()
    config = session_config(args.towers)
    config.intra_op_parallelism_threads = args.threads
    config.inter_op_parallelism_threads = args.threads
    session = tf.Session(graph=graph, config=config)
    session.run(init)
    if model.post_init_op is not None:
        session.run(model.post_init_op)

    def batch(images, labels=None, lengths=None):
        n, width = images.shape[0], images.shape[2]
        return Batch(images[..., None], np.full([n], width, np.int32), labels, lengths, None)

    feeds = [model.feed_dict(model.split(batch(images, labels, lengths)))
             for images, labels, lengths in zip(data["train_images"], data["train_labels"],
                                                data["train_lengths"])]
    infer_feed = model.feed_dict(model.split(batch(data["infer_images"])), training=False)
    result = measure(lambda i: session.run(model.objective, feeds[i % len(feeds)]),
                     lambda i: session.run(frames, infer_feed),
                     data["train_images"].shape[1], data["infer_images"].shape[0], args)
    result.update(params=trainable_parameter_count(graph), towers=args.towers, xla=args.xla,
                  version="TF %s" % ".".join(map(str, TF_VERSION)),
                  onednn=os.environ.get("TF_ENABLE_ONEDNN_OPTS"))
    close_session(session)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", metavar="REFERENCE",
                        help="emit the model's sizes and write its reference outputs here")
    parser.add_argument("--charset", choices=("words", "zh"), default="words",
                        help="with --spec: the output layer's charset")
    parser.add_argument("--towers", type=int, default=1)
    parser.add_argument("--xla", action="store_true")
    parser.add_argument("--classes", type=int, default=37,
                        help="outputs of the model timed (the charset's spec gives them)")
    add_timing_arguments(parser)
    args = parser.parse_args(argv)
    emit(tf_spec(args.spec, args.seed, args.charset) if args.spec else tf_worker(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
