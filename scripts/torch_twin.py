"""A PyTorch twin of crnn_multigpu's CRNN, timed like the TensorFlow runs of peer_benchmark.py.

The same network as ``crnn_multigpu.ocr.crnn.CRNN`` with ``crnn_multigpu.wrapper.layers``:

- seven convolutions without bias (six 3x3 ones padded to keep their size, then one of
  ``height/16`` x 1 without padding), each followed by batch norm (epsilon 1e-5, moving averages
  with decay 0.9, i.e. PyTorch momentum 0.1) and ReLU; 2x2 max pooling after the first two,
  2x1 (height only) after the fourth and sixth: 32x100 -> 1x25, 25 frames;
- two bidirectional LSTM layers (64 units each way), time-major, the second reading both
  directions of the first; the TF cell (``BlockLSTM``) has one bias per gate and adds a
  constant forget bias of 1.0: here ``bias_ih`` is that trainable bias and ``bias_hh`` is
  frozen at the constant (1 for the forget gate, 0 elsewhere), so the trainable parameter
  counts agree;
- a dense layer to ``classes`` outputs, CTC with the blank as the last class, loss the mean
  over the batch of the per-example CTC losses (infeasible ones zeroed), Adam(1e-3).

Initialisation follows the TF layers (He truncated normal for convolutions, Glorot uniform
for the LSTM kernels and the output layer, zero biases). Every image of the benchmark is
100 pixels wide, so every example has all 25 frames and no packing is needed (the TF model
reverses each example's valid frames only, which here is all of them).

PyTorch comes from its own venv (``make benchmark-peers`` creates ``.venv-torch``) and is never
a dependency of crnn_multigpu. ``peer_benchmark.py`` (run with the TF venv's Python) runs this
file as its ``torch`` configuration, after ``--check`` (the twin with the TF model's weights must
give its logits and loss). Alone it prints the trainable parameter count::

    .venv-torch/bin/python scripts/torch_twin.py --count
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peer_benchmark import add_timing_arguments, emit, load_data, measure  # noqa: E402

SMALL = dict(channels=(16, 32, 64, 64, 128, 128, 128), lstm_units=64, lstm_layers=2,
             classes=37, height=32)
TRUNCATED_NORMAL_STD = 0.87962566103423978  # std of a unit normal truncated at +-2


def _he_truncated_normal(weight):
    fan_in = weight.shape[1] * weight.shape[2] * weight.shape[3]  # in_ch * kh * kw
    std = math.sqrt(2.0 / fan_in) / TRUNCATED_NORMAL_STD
    nn.init.trunc_normal_(weight, 0.0, std, -2 * std, 2 * std)


class CRNNTwin(nn.Module):
    """CRNN(): images [B, 1, height, W] -> logits [W/4, B, classes]; ``loss`` is the mean CTC."""

    def __init__(self, classes=37, channels=SMALL["channels"], lstm_units=64, lstm_layers=2,
                 height=32):
        super().__init__()
        if len(channels) != 7 or height % 16:
            raise ValueError("7 channel counts and a height that is a multiple of 16, please")
        pools = [(2, 2), (2, 2), None, (2, 1), None, (2, 1), None]
        blocks, in_ch = [], 1
        for i, (out_ch, pool) in enumerate(zip(channels, pools)):
            last = i == len(channels) - 1
            conv = nn.Conv2d(in_ch, out_ch, (height // 16, 1) if last else (3, 3),
                             padding=0 if last else 1, bias=False)
            _he_truncated_normal(conv.weight)
            blocks += [conv, nn.BatchNorm2d(out_ch, eps=1e-5, momentum=0.1), nn.ReLU()]
            if pool:
                blocks.append(nn.MaxPool2d(pool))
            in_ch = out_ch
        self.convs = nn.Sequential(*blocks)
        self.lstm = nn.LSTM(in_ch, lstm_units, num_layers=lstm_layers, bidirectional=True)
        for layer in range(lstm_layers):
            for suffix in ("l%d" % layer, "l%d_reverse" % layer):
                weight_ih, weight_hh = (getattr(self.lstm, "weight_%s_%s" % (kind, suffix))
                                        for kind in ("ih", "hh"))
                # TF: one Glorot-uniform kernel [input + units, 4 units] per direction.
                limit = math.sqrt(6.0 / (weight_ih.shape[1] + lstm_units + 4 * lstm_units))
                nn.init.uniform_(weight_ih, -limit, limit)
                nn.init.uniform_(weight_hh, -limit, limit)
                nn.init.zeros_(getattr(self.lstm, "bias_ih_" + suffix))
                # bias_hh: the constant forget bias (gate order i, f, g, o), not trained.
                bias_hh = getattr(self.lstm, "bias_hh_" + suffix)
                with torch.no_grad():
                    bias_hh.zero_()
                    bias_hh[lstm_units:2 * lstm_units] = 1.0
                bias_hh.requires_grad_(False)
        self.logits = nn.Linear(2 * lstm_units, classes)
        nn.init.xavier_uniform_(self.logits.weight)
        nn.init.zeros_(self.logits.bias)
        self.blank = classes - 1

    def forward(self, images):
        """images [B, 1, H, W] -> logits [T, B, classes], T = W / 4."""
        features = self.convs(images)                    # [B, C, 1, T]
        seq = features.squeeze(2).permute(2, 0, 1)       # [T, B, C]
        seq, _ = self.lstm(seq)
        return self.logits(seq)

    def loss(self, images, labels, lengths):
        log_probs = self.forward(images).log_softmax(-1)
        frames = torch.full((images.shape[0],), log_probs.shape[0], dtype=torch.long)
        losses = nn.functional.ctc_loss(log_probs, labels, frames, lengths, blank=self.blank,
                                        reduction="none", zero_infinity=True)
        return losses.mean()


def trainable_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _tf_gates(tensor):
    """TF BlockLSTM's gate blocks (i, cell input, f, o) along axis 0 in PyTorch's order
    (i, f, cell input, o)."""
    i, g, f, o = tensor.chunk(4, 0)
    return torch.cat([i, f, g, o], 0)


def load_tf_weights(model, weights):
    """Copy the TF model's variables (``{"crnn/conv1/kernel": array, ...}``) into the twin."""
    def tf_weight(name):
        return torch.from_numpy(np.asarray(weights["crnn/" + name]))

    convs = [m for m in model.convs if isinstance(m, nn.Conv2d)]
    norms = [m for m in model.convs if isinstance(m, nn.BatchNorm2d)]
    with torch.no_grad():
        for n, (conv, norm) in enumerate(zip(convs, norms), 1):
            conv.weight.copy_(tf_weight("conv%d/kernel" % n).permute(3, 2, 0, 1))  # HWIO -> OIHW
            norm.weight.copy_(tf_weight("bn%d/gamma" % n))
            norm.bias.copy_(tf_weight("bn%d/beta" % n))
        for layer in range(model.lstm.num_layers):
            for direction, suffix in (("fw", "l%d" % layer), ("bw", "l%d_reverse" % layer)):
                scope = "bilstm%d/%s/" % (layer + 1, direction)
                kernel = _tf_gates(tf_weight(scope + "kernel").t())  # [4 units, input + units]
                weight_ih = getattr(model.lstm, "weight_ih_" + suffix)
                weight_ih.copy_(kernel[:, :weight_ih.shape[1]])
                getattr(model.lstm, "weight_hh_" + suffix).copy_(kernel[:, weight_ih.shape[1]:])
                getattr(model.lstm, "bias_ih_" + suffix).copy_(_tf_gates(tf_weight(scope + "bias")))
        model.logits.weight.copy_(tf_weight("logits/kernel").t())
        model.logits.bias.copy_(tf_weight("logits/bias"))


def check_against_tf(model, path, tolerance=1e-4):
    """Load the TF weights of ``path`` (peer_benchmark's reference .npz) and compare the
    logits and the loss in inference and training mode; the differences, raising if too big."""
    with np.load(path) as data:
        reference = dict((k, data[k]) for k in data.files)
    load_tf_weights(model, dict((k[2:], v) for k, v in reference.items() if k.startswith("w:")))
    images = torch.from_numpy(reference["images"][:, None])
    labels = torch.from_numpy(reference["labels"].astype(np.int64))
    lengths = torch.from_numpy(reference["lengths"].astype(np.int64))
    report = {}
    for training in (0, 1):
        model.train(bool(training))
        with torch.no_grad():
            logits = model(images).numpy()
            loss = float(model.loss(images, labels, lengths))
        expected, expected_loss = reference["logits_%d" % training], float(reference["loss_%d"
                                                                                     % training])
        mode = "training" if training else "inference"
        report[mode] = {"logits_max_abs_diff": float(np.abs(logits - expected).max()),
                        "logits_max_abs": float(np.abs(expected).max()),
                        "loss": loss, "tf_loss": expected_loss}
        scale = max(1.0, float(np.abs(expected).max()))
        if (logits.shape != expected.shape or np.abs(logits - expected).max() > tolerance * scale
                or abs(loss - expected_loss) > tolerance * max(1.0, abs(expected_loss))):
            raise AssertionError("the twin differs from the TF model in %s mode: %r"
                                 % (mode, report[mode]))
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", action="store_true",
                        help="print the trainable parameter count and exit")
    parser.add_argument("--classes", type=int, default=SMALL["classes"])
    parser.add_argument("--channels", default=",".join(map(str, SMALL["channels"])))
    parser.add_argument("--lstm-units", type=int, default=SMALL["lstm_units"])
    parser.add_argument("--lstm-layers", type=int, default=SMALL["lstm_layers"])
    parser.add_argument("--height", type=int, default=SMALL["height"])
    parser.add_argument("--expect-params", type=int,
                        help="fail unless the twin has exactly this many trainable parameters")
    parser.add_argument("--check", metavar="REFERENCE",
                        help="load the TF weights of this .npz (peer_benchmark.py writes it) and "
                             "compare logits and loss with the TF model's; exit 3 if they differ")
    add_timing_arguments(parser)
    args = parser.parse_args(argv)
    # Thread pools first: the inter-op pool can only be sized before any parallel work.
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.manual_seed(args.seed)
    model = CRNNTwin(args.classes, tuple(int(c) for c in args.channels.split(",")),
                     args.lstm_units, args.lstm_layers, args.height)
    params = trainable_parameters(model)
    if args.count:
        print(params)
        return 0
    if args.expect_params is not None and params != args.expect_params:
        sys.stderr.write("error: the PyTorch twin has %d trainable parameters, the TensorFlow "
                         "model %d\n" % (params, args.expect_params))
        return 3
    if args.check:
        try:
            report = check_against_tf(model, args.check)
        except AssertionError as error:
            sys.stderr.write("error: %s\n" % error)
            return 3
        emit({"params": params, "check": report})
        return 0
    if not args.data:
        parser.error("--data is needed (peer_benchmark.py writes it)")
    data = load_data(args.data)
    batches = [(torch.from_numpy(images[:, None]), torch.from_numpy(labels.astype(np.int64)),
                torch.from_numpy(lengths.astype(np.int64)))
               for images, labels, lengths in zip(data["train_images"], data["train_labels"],
                                                  data["train_lengths"])]
    infer_images = torch.from_numpy(data["infer_images"][:, None])
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    def train_step(i):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        model.loss(*batches[i % len(batches)]).backward()
        optimizer.step()

    def infer_step(_):
        model.eval()
        with torch.inference_mode():
            model(infer_images).log_softmax(-1).argmax(-1)

    result = measure(train_step, infer_step, batches[0][0].shape[0], infer_images.shape[0], args)
    result.update(params=params, towers=1, version="PyTorch %s" % torch.__version__,
                  threads=torch.get_num_threads())
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
