"""``--amp-bf16``: bfloat16 mixed-precision training for the plugin's tasks, and a clear error for ``--bf16``.

fairseq 0.12 has no bfloat16 mode for GPUs: its ``--bf16`` (and ``--memory-efficient-bf16``) implies
``--tpu``, so on a GPU or CPU ``fairseq-train`` stops inside torch_xla (``'NoneType' object has no attribute
'xla_device'``, or ``No module named 'torch_xla'`` with several GPUs). Its ``--amp`` autocasts to float16
only and scales the loss.

``--amp-bf16`` is a task option (the tasks below are the plugin's hook into every training step). The model,
its gradients and the optimizer state stay float32, as without the option; each training forward pass
runs under ``torch.autocast`` in bfloat16, so matrix products and attention compute in bfloat16 while
the losses (``losses.py`` upcasts the logits), layer norms and softmaxes keep float32 where autocast
puts them. bfloat16 has float32's exponent range, so no loss scaling is needed: a non-finite gradient
stops training as it does in float32. Validation runs in float32, as under fairseq's ``--amp``.

The check on ``--tpu`` runs when the task builds its criterion, before fairseq's trainer reaches for
torch_xla: with one process (one GPU, or ``--cpu``) ``--bf16`` then stops with an error naming
``--amp-bf16``. With several GPUs fairseq spawns its TPU workers before any task exists, and the error
stays torch_xla's.
"""

import importlib.util
from dataclasses import dataclass, field

import torch
from fairseq.dataclass import FairseqDataclass
from omegaconf import II
from omegaconf.errors import OmegaConfBaseException

TPU_WITHOUT_XLA = (
    "--tpu is set (fairseq 0.12's --bf16 and --memory-efficient-bf16 imply it: they are its TPU mode) but "
    "torch_xla is not installed. For bfloat16 training on GPUs (or --cpu) use --amp-bf16 instead: float32 "
    "weights and optimizer, bfloat16 autocast, no loss scaling"
)


@dataclass
class MixedPrecisionConfig(FairseqDataclass):
    """The task option ``--amp-bf16`` and the fairseq precision options it is checked against."""

    amp_bf16: bool = field(
        default=False,
        metadata={
            "help": "bfloat16 mixed precision on GPUs (and --cpu): float32 weights and optimizer, the "
            "training forward pass under bfloat16 autocast, no loss scaling. Use it instead of --bf16 "
            "(fairseq's TPU mode); not with --fp16, --amp or --bf16"
        },
    )
    fp16: bool = II("common.fp16")
    bf16: bool = II("common.bf16")
    amp: bool = II("common.amp")
    tpu: bool = II("common.tpu")


def _flag(cfg, name: str) -> bool:
    """``cfg.<name>`` where it is set to true; false where it is missing or cannot be resolved (a task
    config built on its own, outside fairseq's full config, or a checkpoint's from before the option)."""
    try:
        return getattr(cfg, name, False) is True
    except OmegaConfBaseException:
        return False


def check_precision_options(cfg) -> None:
    """Clear errors for ``--tpu`` without torch_xla and for ``--amp-bf16`` with another precision mode."""
    if _flag(cfg, "tpu") and importlib.util.find_spec("torch_xla") is None:
        raise ValueError(TPU_WITHOUT_XLA)
    if not _flag(cfg, "amp_bf16"):
        return
    for other, option in (("bf16", "--bf16"), ("fp16", "--fp16"), ("amp", "--amp")):
        if _flag(cfg, other):
            raise ValueError(
                f"--amp-bf16 cannot be combined with {option}: it is bfloat16 autocast over float32 "
                "weights (fairseq's --amp in bfloat16, without loss scaling); give only one precision option"
            )


def check_bf16_device(device_type: str) -> None:
    """A clear error where bfloat16 autocast cannot run on ``device_type`` (a GPU without bfloat16)."""
    if device_type == "cuda" and not torch.cuda.is_bf16_supported():
        raise RuntimeError(
            "--amp-bf16: this GPU does not support bfloat16; use --amp (float16 with loss scaling) instead"
        )


class MixedPrecisionTask:
    """Mixin for a task whose config has a :class:`MixedPrecisionConfig`; it goes before
    ``FairseqTask`` in the bases. Without ``--amp-bf16`` training steps are fairseq's own."""

    def build_criterion(self, cfg, from_checkpoint=False):
        """The checks run here: ``fairseq-train`` builds the criterion before its trainer (which is where
        ``--tpu`` fails), and loading a model for decoding builds none, so the settings a checkpoint
        stores never stop ``fairseq-generate`` or the Python API."""
        check_precision_options(self.cfg)
        return super().build_criterion(cfg, from_checkpoint)

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        """fairseq's training step, with the forward pass under bfloat16 autocast for ``--amp-bf16``.

        It cannot wrap fairseq's own step: that one enters ``torch.cuda.amp.autocast(enabled=False)``
        around the forward pass whenever the optimizer is not fairseq's AMP wrapper, which would switch
        a surrounding CUDA autocast off again.
        """
        if not _flag(self.cfg, "amp_bf16"):
            return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad)
        model.train()
        model.set_num_updates(update_num)
        device = next(model.parameters()).device.type
        check_bf16_device(device)
        with torch.autograd.profiler.record_function("forward"):
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                loss, sample_size, logging_output = criterion(model, sample)
        if ignore_grad:
            loss *= 0
        with torch.autograd.profiler.record_function("backward"):
            optimizer.backward(loss)
        return loss, sample_size, logging_output
