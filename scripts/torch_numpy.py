"""numpy <-> PyTorch through DLPack. torch.from_numpy and Tensor.numpy() need the numpy that
torch was built against (Debian's torch: numpy 1); DLPack works with numpy 1 and 2 alike, so the
tests and model references run in both environments of scripts/test.sh."""
import numpy as np
import torch
import torch.utils.dlpack


def tensor(x, requires_grad: bool = False) -> torch.Tensor:
    """A tensor holding a copy of `x` (an array or anything np.array takes)."""
    return torch.utils.dlpack.from_dlpack(np.array(x)).requires_grad_(requires_grad)


def array(t: torch.Tensor) -> np.ndarray:
    """A numpy copy of `t` (detached from autograd)."""
    return np.from_dlpack(t.detach()).copy()
