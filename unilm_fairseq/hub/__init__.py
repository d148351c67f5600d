"""The Python APIs: load a checkpoint in one call, then encode, generate, score and extract features.

:class:`UniLMHubInterface` serves ``unilmv2`` checkpoints (``UniLMModel`` is its other name) and
:class:`PALMHubInterface` ``palm`` ones. ``UniLMv2Model.from_pretrained`` and ``PALMModel.from_pretrained``
return them, as fairseq's ``from_pretrained`` returns a ``GeneratorHubInterface``. :func:`load_model_folder`
gives a fine-tuned model folder as the one of the two that fits it.
"""

from .base import UniLMHubInterface, UniLMModel
from .folder import load_model_folder, log_for_decoding_scripts
from .palm import PALMHubInterface

__all__ = [
    "PALMHubInterface",
    "UniLMHubInterface",
    "UniLMModel",
    "load_model_folder",
    "log_for_decoding_scripts",
]
