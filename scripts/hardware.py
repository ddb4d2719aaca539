"""Published hardware figures and published multi-GPU results used by ``transfer_model.py``.

Every number here has its source in docs/benchmarks.md ("Transfer model"); figures marked
*assumption* are not published and are checked only through the validation runs.
Bandwidths are per direction (links are full duplex), in bytes per second.
"""
import collections

GPU = collections.namedtuple("GPU", "name flops")
# Peak fp32 (CUDA cores, no tensor cores) from NVIDIA's datasheets.
K80 = GPU("K80 (one GK210)", 8.73e12 / 2)   # 8.73 TFLOPS per two-GPU board, boost clock
P100 = GPU("P100 SXM2", 10.6e12)
V100_PCIE = GPU("V100 PCIe", 14.0e12)
V100 = GPU("V100 SXM2", 15.7e12)
A100 = GPU("A100 SXM4", 19.5e12)
H100 = GPU("H100 SXM5", 66.9e12)

# Achieved fractions of a link's nominal rate.
PCIE_EFFICIENCY = 0.8       # assumption: ~12.6 of 15.75 GB/s on PCIe 3.0 x16 (TLP overheads)
NVLINK1_EFFICIENCY = 0.913  # P100 SXM2 p2pBandwidthLatencyTest: 18.31 of 20 GB/s per link (Dell)
NVLINK2_EFFICIENCY = 0.958  # V100 SXM2 p2pBandwidthLatencyTest: 143.7 of 150 GB/s (Dell)

PCIE3_X16 = 15.75e9 * PCIE_EFFICIENCY   # 8 GT/s x 16 lanes, 128b/130b encoding
PCIE4_X16 = 31.5e9 * PCIE_EFFICIENCY
PCIE5_X16 = 63.0e9 * PCIE_EFFICIENCY

# DGX-1 (NVIDIA's system architecture whitepaper): a "hybrid cube mesh", GPUs 0-3 and 4-7
# each fully linked and GPU i linked to GPU i + 4; 3-4 and 7-0 have no NVLink between them.
DGX1_NVLINK_PAIRS = frozenset(
    frozenset(pair) for pair in [(a, b) for quad in ((0, 1, 2, 3), (4, 5, 6, 7))
                                 for a in quad for b in quad if a < b]
    + [(i, i + 4) for i in range(4)])

# pcie: each GPU's own x16 link and each switch uplink to the CPU; gpus_per_uplink GPUs share
# one uplink (DGX-1: four PCIe switches with two GPUs each; a K80 board: two GPUs behind its
# on-board switch); nvlink: all of one GPU's NVLinks together (None: GPU-GPU over PCIe);
# nvlink_pairs: the GPU pairs that have an NVLink (None: every pair, as through NVSwitch or
# NCCL 2's rings over all links); the other pairs go over PCIe through the host.
Platform = collections.namedtuple("Platform",
                                  "name gpu pcie gpus_per_uplink nvlink nvlink_pairs in_table")

PLATFORMS = collections.OrderedDict((p.name, p) for p in [
    Platform("K80 server (GCE/AWS)", K80, PCIE3_X16, 2, None, None, False),
    Platform("DGX-1 P100", P100, PCIE3_X16, 2, 4 * 20e9 * NVLINK1_EFFICIENCY, None, False),
    # NCCL 1.3, which tf.contrib.nccl used in 2017, builds one ring in device order (0..7):
    # one NVLink per hop, and the hops 3 -> 4 and 7 -> 0 through PCIe and host memory.
    Platform("DGX-1 P100, NCCL 1 ring", P100, PCIE3_X16, 2, 20e9 * NVLINK1_EFFICIENCY,
             DGX1_NVLINK_PAIRS, False),
    Platform("PCIe 3.0 V100 server", V100_PCIE, PCIE3_X16, 2, None, None, True),
    Platform("DGX-1 V100 (NVLink 2)", V100, PCIE3_X16, 2, 6 * 25e9 * NVLINK2_EFFICIENCY, None,
             True),
    Platform("DGX-1 V100, one link", V100, PCIE3_X16, 2, 25e9 * NVLINK2_EFFICIENCY, None, True),
    Platform("DGX-2 V100 (NVSwitch)", V100, PCIE3_X16, 2, 6 * 25e9 * NVLINK2_EFFICIENCY, None,
             True),
    Platform("DGX A100 (NVLink 3)", A100, PCIE4_X16, 2, 12 * 25e9 * NVLINK2_EFFICIENCY, None,
             True),
    Platform("DGX H100 (NVLink 4)", H100, PCIE5_X16, 2, 18 * 25e9 * NVLINK2_EFFICIENCY, None,
             True),
])

# tf_cnn_benchmarks, synthetic ImageNet data, images/s on 1 and 8 GPUs of one server
# (tensorflow/docs, site/en/r1/guide/performance/benchmarks.md, May 2017: the "Training
# synthetic data" tables of the DGX-1, GCE and AWS sections, batch 32 from their "Other
# results"). Every single-server row of a model reference_cnns.py builds, each once. strategy:
# the traffic function in transfer_model.py matching the page's variable_update and
# local_parameter_device for that model (its configuration table is per model; the batch-32
# rows are taken to use the same configuration).
Run = collections.namedtuple("Run", "label model batch platform strategy images_1 images_8")

VALIDATION_RUNS = [
    Run("ResNet-50 b64 DGX-1 P100 PS cpu", "ResNet50", 64, "DGX-1 P100", "ps_host", 219, 1734),
    Run("ResNet-50 b32 DGX-1 P100 PS cpu", "ResNet50", 32, "DGX-1 P100", "ps_host", 195, 1485),
    Run("VGG16 b64 DGX-1 P100 NCCL", "VGG16", 64, "DGX-1 P100, NCCL 1 ring", "replicated",
        154, 1081),
    Run("VGG16 b32 DGX-1 P100 NCCL", "VGG16", 32, "DGX-1 P100, NCCL 1 ring", "replicated",
        144, 820),
    Run("AlexNet b512 DGX-1 P100 NCCL", "AlexNet", 512, "DGX-1 P100, NCCL 1 ring", "replicated",
        2987, 17822),
    Run("ResNet-50 b64 GCE K80 PS cpu", "ResNet50", 64, "K80 server (GCE/AWS)", "ps_host",
        51.9, 387),
    Run("ResNet-50 b32 GCE K80 PS cpu", "ResNet50", 32, "K80 server (GCE/AWS)", "ps_host",
        49.5, 362),
    Run("VGG16 b32 GCE K80 PS cpu", "VGG16", 32, "K80 server (GCE/AWS)", "ps_host", 35.4, 234),
    Run("AlexNet b512 GCE K80 PS cpu", "AlexNet", 512, "K80 server (GCE/AWS)", "ps_host",
        656, 4640),
    Run("ResNet-50 b64 AWS K80 replicated, copies", "ResNet50", 64, "K80 server (GCE/AWS)",
        "replicated_copy", 51.5, 384),
    Run("ResNet-50 b32 AWS K80 replicated, copies", "ResNet50", 32, "K80 server (GCE/AWS)",
        "replicated_copy", 49.0, 355),
    Run("VGG16 b32 AWS K80 PS gpu (spread)", "VGG16", 32, "K80 server (GCE/AWS)", "ps_towers",
        36.3, 260),
    Run("AlexNet b512 AWS K80 PS gpu (spread)", "AlexNet", 512, "K80 server (GCE/AWS)",
        "ps_towers", 684, 4853),
]
