"""A guard that makes reading tensor values back to the host an error (a GPU stall in a forward pass)."""

import contextlib

import torch


class HostRead(AssertionError):
    """A tensor was read back to the host where nothing may be."""


# every Tensor method that hands a tensor's values to Python
HOST_READS = ("item", "__int__", "__float__", "__bool__", "tolist", "numpy", "cpu")


@contextlib.contextmanager
def no_host_reads(reads=HOST_READS):
    """Inside the block, the ``torch.Tensor`` methods named in ``reads`` raise :class:`HostRead`.

    Each of them copies a tensor's values to the host, which on a GPU waits for every queued kernel.
    """
    own = {name: torch.Tensor.__dict__.get(name) for name in reads}

    def refuse(name):
        def read(self, *args, **kwargs):
            raise HostRead(f"Tensor.{name} read a tensor of shape {tuple(self.shape)} back to the host")

        return read

    try:
        for name in reads:
            setattr(torch.Tensor, name, refuse(name))
        yield
    finally:
        for name, method in own.items():
            if method is None:
                delattr(torch.Tensor, name)  # inherited from torch's C base class
            else:
                setattr(torch.Tensor, name, method)
