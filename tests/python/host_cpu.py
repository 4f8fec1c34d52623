"""What this CPU gives the host target ("llvm"), for tests whose expectations depend on it, and
a target of fixed vector width for those that check choices made for AVX-512's registers."""
import re

# Layout and tile choices are written for its 16 float32 lanes; built without running (jit=False).
AVX512 = "llvm -mcpu=skylake-avx512"


def flags():
    """The CPU's feature flags as Linux names them."""
    with open("/proc/cpuinfo") as f:
        return set(re.search(r"^flags\s*:(.*)$", f.read(), re.M).group(1).split())


def float_lanes():
    """float32 lanes of the widest vectors the host target uses."""
    have = flags()
    return 16 if "avx512f" in have else 8 if "avx2" in have else 4


def vector_registers():
    """Vector registers of the host target: 32 with AVX-512, else 16 (AVX2, SSE)."""
    return 32 if "avx512f" in flags() else 16
