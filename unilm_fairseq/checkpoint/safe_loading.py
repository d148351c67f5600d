"""Allow-list the classes fairseq 0.12 checkpoints pickle, for ``weights_only`` loading.

torch >= 2.6 loads checkpoints with ``weights_only=True``, which refuses any
pickled class it does not know. fairseq stores its config (an
``argparse.Namespace`` for argparse-style configs, omegaconf containers when a
run resumes across processes) and meter states next to the tensors. We allow
exactly those classes, so ``--restore-file``, ``fairseq-generate``,
``fairseq-validate`` and ``fairseq-interactive`` keep the safe loader on; we
never switch the check off.
"""

import argparse
import collections
import typing

import torch


def _numpy_globals():
    import numpy as np

    found = [np.dtype, np.ndarray]  # what np.ndarray.__reduce__ references
    try:  # numpy >= 2
        from numpy._core.multiarray import _reconstruct, scalar
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _reconstruct, scalar
    found += [_reconstruct, scalar]
    found += [type(np.dtype(name)) for name in ("float64", "float32", "int64", "int32", "bool")]
    return found


def _omegaconf_globals():
    from omegaconf import DictConfig, ListConfig
    from omegaconf.base import ContainerMetadata, Metadata
    from omegaconf.nodes import AnyNode

    return [DictConfig, ListConfig, ContainerMetadata, Metadata, AnyNode]


def fairseq_checkpoint_globals() -> list:
    """The classes and functions a fairseq 0.12 checkpoint may reference.

    * ``argparse.Namespace``: argparse-style configs (``state["args"]``);
    * numpy array and scalar reconstruction: meters that hold numpy values;
    * omegaconf containers, ``typing.Any``, ``defaultdict``, ``dict``/``list``/``int``
      and fairseq's ``_TensorPlaceholder``: the state rank 0 broadcasts to the
      other workers when a multi-process run resumes.
    """
    from fairseq.distributed.utils import _TensorPlaceholder

    allowed = [argparse.Namespace, collections.defaultdict, dict, list, int, typing.Any, _TensorPlaceholder]
    allowed += _numpy_globals()
    allowed += _omegaconf_globals()
    return allowed


def allow_fairseq_checkpoints() -> None:
    """Register :func:`fairseq_checkpoint_globals` with torch's safe unpickler."""
    add_safe_globals = getattr(torch.serialization, "add_safe_globals", None)
    if add_safe_globals is None:  # torch < 2.4 does not restrict unpickling by default
        return
    add_safe_globals(fairseq_checkpoint_globals())
