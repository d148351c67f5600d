"""The Python APIs: load a checkpoint in one call, then encode, generate, score and extract features.

:class:`UniLMHubInterface` serves ``unilmv2`` checkpoints (``UniLMModel`` is its other name) and
:class:`PALMHubInterface` ``palm`` ones. ``UniLMv2Model.from_pretrained`` and ``PALMModel.from_pretrained``
return them, as fairseq's ``from_pretrained`` returns a ``GeneratorHubInterface``.
"""

from .base import UniLMHubInterface, UniLMModel
from .palm import PALMHubInterface

__all__ = ["PALMHubInterface", "UniLMHubInterface", "UniLMModel"]
