"""The type faces tests render in, pinned: a test's images must not change with whatever else a
machine has installed (fonts-dejavu-core and -extra: scripts/install_system_packages.sh)."""
from crnn_multigpu.datasets import find_fonts

DEJAVU = "/usr/share/fonts/truetype/dejavu"
# fonts-wqy-microhei (install_system_packages.sh --minimal): a collection of two faces that draw
# GB2312's Hanzi, which DejaVu lacks.
MICROHEI = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"


def tiny_faces():
    """The three DejaVu faces the tiny training sets are drawn in."""
    return find_fonts([DEJAVU])[:3]
