"""A model folder as the hub interface that fits its checkpoint, for the scripts that decode with one."""

import logging
import sys
from typing import Optional, Union

from .base import UniLMHubInterface
from .palm import PALMHubInterface


def load_model_folder(
    model_dir: str, checkpoint_file: Optional[str] = None, cpu: bool = False
) -> Union[UniLMHubInterface, PALMHubInterface]:
    """Load a model folder (``finetune.sh``'s ``WORK_DIR/checkpoints``) for generation: a ``palm_seq2seq``
    checkpoint comes back as :class:`PALMHubInterface`, any other as :class:`UniLMHubInterface`; on CUDA
    when it is available (unless ``cpu``), in eval mode."""
    import torch

    hub = UniLMHubInterface.from_pretrained(model_dir, checkpoint_file=checkpoint_file)  # PALM's: its TASK
    if torch.cuda.is_available() and not cpu:
        hub = hub.cuda()
    return hub.eval()


def log_for_decoding_scripts(logger: logging.Logger) -> None:
    """The console of a script that decodes with a model folder: its own progress (``logger`` at INFO) and
    the libraries' warnings (a source cut to the model's positions ...), on stderr."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s | %(name)s | %(message)s", stream=sys.stderr
    )
    logger.setLevel(logging.INFO)
