"""scripts/benchmark.py keeps running on this stack and writes the ratios others compare.

A smoke run (one warm-up step, one repetition of one step, one traced step): it checks that
every configuration builds and trains and that the JSON has its documented shape; the figures
of a run this short are not meaningful and are not asserted.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from waiting import HANG_GUARD
from crnn_multigpu.compat import TF_VERSION
from crnn_multigpu.ocr.crnn import CRNN

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATIO_KEYS = ("wrapper1_vs_plain", "towers2_vs_towers1", "wrapper_vs_mirrored",
              "input_wait_fraction", "embedding_2m_vs_20k", "identical_configs",
              "augment_vs_no_augment", "input_wait_fraction_augment", "ps_towers_vs_mirrored",
              "replicated_vs_mirrored", "replicated_packed_vs_mirrored")
CONFIGURATIONS = ("plain", "wrapper_1", "wrapper_2", "wrapper_4", "mirrored_2", "feed_dict_2",
                  "pipeline_2", "cached_2", "embedding_20k", "embedding_2m", "dataset_2",
                  "dataset_augment_2", "ps_packed_2", "ps_towers_2", "replicated_2",
                  "replicated_packed_2") + (("wrapper_1_float16", "wrapper_1_bfloat16")
                                            if TF_VERSION >= (2, 0) else ())


@pytest.mark.slow
def test_quick_benchmark_builds_every_configuration_and_writes_the_ratios(tmp_path, tiny_dataset):
    out = str(tmp_path / "bench.json")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "benchmark.py"), "--quick", "--reps", "1",
         "--steps", "1", "--warmup", "1", "--min-seconds", "0", "--batch-size", "8", "--profile",
         "--trace-steps", "1", "--json", out, "--data", tiny_dataset],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "could not be built" not in result.stderr, result.stderr[-3000:]
    report = json.load(open(out))
    for key in RATIO_KEYS:
        assert isinstance(report["ratios"][key], float) and report["ratios"][key] >= 0, key
    assert set(CONFIGURATIONS) <= set(report["step_seconds"]), report["step_seconds"].keys()
    assert all(seconds > 0 for seconds in report["step_seconds"].values())
    assert report["settings"]["batch_size"] == 8
    assert "op time by type per step" in result.stdout  # the wrapper/Mirrored profile
    # steps/s and images/s per precision (TF 1.15 emulates float16 on CPU: not timed there)
    for precision in ("float32",) + (("mixed_float16", "mixed_bfloat16")
                                     if TF_VERSION >= (2, 0) else ()):
        assert re.search(r"^%s +\d+\.\d+ +\d+\.\d+$" % precision, result.stdout, re.M), precision


def test_gpu_mode_on_a_machine_without_enough_gpus_says_so():
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "benchmark.py"), "--quick", "--gpus"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
        timeout=HANG_GUARD, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "--gpus: this configuration needs 1 GPU(s), 0 visible" in result.stderr
    assert "no configuration could be built" in result.stderr


@pytest.mark.slow
def test_step_efficiency_reports_flops_peak_and_profile(tmp_path):
    out = str(tmp_path / "eff.json")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "step_efficiency.py"), "--batch", "4",
         "--reps", "1", "--steps", "1", "--top", "5", "--peak-repeats", "1", "--peak-sizes",
         "512", "1024", "--json", out],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.load(open(out))
    assert report["gemm_flops_per_s"]["numpy"] > 1e8 and report["gemm_flops_per_s"]["tensorflow"] > 1e8
    # The peaks come from processes of their own, with the BLAS overrides cleared for them.
    for when in ("before", "after"):
        measured = report["gemm_by_size"][when]
        assert measured["blas_overrides_seen"] == [] and 0 <= measured["others_share"] <= 1
    assert report["gemm_flops_per_s"]["numpy_after"] == max(
        report["gemm_by_size"]["after"]["numpy"].values())
    figures = report["configurations"]["batch4"]
    # Batch 4 of 32x100 images: about a GFLOP counted (convolutions dominate), the LSTM apart.
    assert 1e8 < figures["profiler_flops"] < 1e10
    # The LSTM's matmuls the profiler misses: per layer, 2 directions x 3 matmuls (forward,
    # input and weight gradients) x 2 FLOP per multiply-add, [B, in + units] x [in + units, 4
    # units] on each of the 25 frames of a 100 px image; the default CRNN, batch 4.
    units, top = CRNN.DEFAULTS["lstm_units"], CRNN.DEFAULTS["channels"][-1]
    assert figures["lstm_flops"] == sum(2 * 3 * 2 * 4 * 25 * (inputs + units) * 4 * units
                                        for inputs in (top, 2 * units))
    # The fraction is the step's FLOP rate over the best of the four GEMM rates...
    gemm = report["gemm_flops_per_s"]
    assert gemm["peak"] == max(gemm[k] for k in ("numpy", "tensorflow", "numpy_after",
                                                 "tensorflow_after"))
    rate = (figures["profiler_flops"] + figures["lstm_flops"]) / figures["step_seconds"]
    assert figures["flops_per_s"] == pytest.approx(rate, rel=1e-9)
    assert figures["fraction_of_peak"] == pytest.approx(rate / gemm["peak"], rel=1e-9)
    assert figures["images_per_s"] == pytest.approx(4 / figures["step_seconds"], rel=1e-9)
    # Positive, and no more: whether a step runs below the GEMM peak depends on what else the
    # machine ran while each was measured.
    assert figures["fraction_of_peak"] > 0
    # ...and the printed lines say the same, to their rounding.
    peaks = [float(v) for v in re.search(
        r"^float32 GEMM peak: numpy ([\d.]+) GFLOP/s, TF ([\d.]+) GFLOP/s \(after the steps: "
        r"([\d.]+), ([\d.]+)\)$", result.stdout, re.M).groups()]
    ms, counted, lstm, gflops, percent = [float(v) for v in re.search(
        r"^batch4: ([\d.]+) ms/step, \d+ images/s; ([\d.]+) GFLOP counted \+ ([\d.]+) GFLOP "
        r"LSTM = ([\d.]+) GFLOP/s, ([\d.]+) % of the float32 GEMM peak$", result.stdout,
        re.M).groups()]
    # Each printed number is its JSON figure rounded to the digits printed.
    for got, exact, half_digit in (
            list(zip(peaks, [gemm[k] / 1e9 for k in ("numpy", "tensorflow", "numpy_after",
                                                     "tensorflow_after")], [0.05] * 4)) +
            [(ms, 1e3 * figures["step_seconds"], 0.05),
             (counted, figures["profiler_flops"] / 1e9, 0.005),
             (lstm, figures["lstm_flops"] / 1e9, 0.005), (gflops, rate / 1e9, 0.05),
             (percent, 100 * figures["fraction_of_peak"], 0.05)]):
        assert abs(got - exact) <= half_digit + 1e-9, (got, exact)
    # The printed percentage from the printed figures, within what their rounding allows.
    from_print = 100 * (counted + lstm) / (ms / 1e3) / max(peaks)
    slack = 0.005 * 2 / (counted + lstm) + 0.05 / ms + 0.05 / max(peaks)
    assert abs(percent - from_print) <= 0.05 + from_print * slack * 1.01, (percent, from_print)
    # Under its plain name also with oneDNN on (which runs _MklNativeConv2DBackpropFilter). The
    # JSON holds every op type: where it ranks depends on the load (printed: the --top 5).
    assert figures["op_micros_by_type"]["Conv2DBackpropFilter"] > 0
    assert len(figures["op_micros_by_type"]) > 5
    assert set(figures["op_dtypes"]) == set(figures["op_micros_by_type"])
    assert "% of the float32 GEMM peak" in result.stdout
    assert report["precision"] == "float32" and "float32" in figures["op_micros_by_dtype"]


def test_gemm_peak_runs_in_a_clean_process_of_its_own(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import gemm_peak
    # Only the BLAS overrides leave the measuring process's environment.
    env = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512", "PATH": "/bin", "X": "1"}
    assert gemm_peak.clean_environment(env) == {"PATH": "/bin", "X": "1"}
    assert env["OPENBLAS_CORETYPE"] == "Haswell"  # the caller's environment stays as it was
    out = str(tmp_path / "peak.json")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "gemm_peak.py"), "--repeats", "1",
         "--sizes", "512", "1024", "--json", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.load(open(out))
    assert report["blas_overrides_seen"] == []
    assert report["blas_overrides_cleared"] == [
        name for name in gemm_peak.BLAS_OVERRIDES if name in os.environ]
    rates = report["numpy"]
    assert sorted(int(n) for n in rates) == [512, 1024] and "tensorflow" not in report
    assert report["peak"] == max(rates.values()) > 1e8
    # The printed table gives the same figures, to their rounding.
    printed = re.search(r"peak ([\d.]+) GFLOP/s; other processes used ([\d.]+) %",
                        result.stdout).groups()
    assert abs(float(printed[0]) - report["peak"] / 1e9) <= 0.05 + 1e-9
    assert abs(float(printed[1]) - 100 * report["others_share"]) <= 0.05 + 1e-9
    for n, rate in rates.items():
        assert "%s: %.1f" % (n, rate / 1e9) in result.stdout
