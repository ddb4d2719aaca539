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

# pcie: each GPU's own x16 link and each switch uplink to the CPU; gpus_per_uplink GPUs share
# one uplink (DGX-1: four PCIe switches with two GPUs each; a K80 board: two GPUs behind its
# on-board switch); nvlink: all of one GPU's NVLinks together (None: GPU-GPU over PCIe).
Platform = collections.namedtuple("Platform", "name gpu pcie gpus_per_uplink nvlink in_table")

PLATFORMS = collections.OrderedDict((p.name, p) for p in [
    Platform("K80 server (GCE/AWS)", K80, PCIE3_X16, 2, None, False),
    Platform("DGX-1 P100", P100, PCIE3_X16, 2, 4 * 20e9 * NVLINK1_EFFICIENCY, False),
    Platform("DGX-1 P100, one ring", P100, PCIE3_X16, 2, 20e9 * NVLINK1_EFFICIENCY, False),
    Platform("PCIe 3.0 V100 server", V100_PCIE, PCIE3_X16, 2, None, True),
    Platform("DGX-1 V100 (NVLink 2)", V100, PCIE3_X16, 2, 6 * 25e9 * NVLINK2_EFFICIENCY, True),
    Platform("DGX-1 V100, one link", V100, PCIE3_X16, 2, 25e9 * NVLINK2_EFFICIENCY, True),
    Platform("DGX-2 V100 (NVSwitch)", V100, PCIE3_X16, 2, 6 * 25e9 * NVLINK2_EFFICIENCY, True),
    Platform("DGX A100 (NVLink 3)", A100, PCIE4_X16, 2, 12 * 25e9 * NVLINK2_EFFICIENCY, True),
    Platform("DGX H100 (NVLink 4)", H100, PCIE5_X16, 2, 18 * 25e9 * NVLINK2_EFFICIENCY, True),
])

# tf_cnn_benchmarks, synthetic ImageNet data, images/s on 1 and 8 GPUs (tensorflow/docs,
# site/en/r1/guide/performance/benchmarks.md, May 2017). strategy: the key in
# transfer_model.STRATEGIES matching the run's variable_update / local_parameter_device;
# stated: False where the page does not say which variable_update the run used (VGG16 at
# batch 32 on the DGX-1 is assumed to use the batch-64 configuration).
Run = collections.namedtuple("Run", "label model batch platform strategy images_1 images_8 stated")

VALIDATION_RUNS = [
    Run("ResNet-50 b64 DGX-1 P100 PS cpu", "ResNet50", 64, "DGX-1 P100", "ps_host", 219, 1734,
        True),
    Run("VGG16 b64 DGX-1 P100 NCCL, all links", "VGG16", 64, "DGX-1 P100", "replicated",
        154, 1081, True),
    Run("VGG16 b64 DGX-1 P100 NCCL, one ring", "VGG16", 64, "DGX-1 P100, one ring",
        "replicated", 154, 1081, True),
    Run("VGG16 b32 DGX-1 P100 NCCL* all links", "VGG16", 32, "DGX-1 P100", "replicated",
        144, 820, False),
    Run("VGG16 b32 DGX-1 P100 NCCL* one ring", "VGG16", 32, "DGX-1 P100, one ring", "replicated",
        144, 820, False),
    Run("ResNet-50 b64 GCE K80 PS cpu", "ResNet50", 64, "K80 server (GCE/AWS)", "ps_host",
        51.9, 387, True),
    Run("VGG16 b32 GCE K80 PS cpu", "VGG16", 32, "K80 server (GCE/AWS)", "ps_host", 35.4, 234,
        True),
    Run("VGG16 b32 AWS K80 PS gpu (spread)", "VGG16", 32, "K80 server (GCE/AWS)", "ps_towers",
        36.3, 260, True),
]
